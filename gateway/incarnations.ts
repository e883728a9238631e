/**
 * Which incarnation of each collection the log holds (TopicInfo.incarnation: how many times the
 * name was dropped before), read from the log's topic list and kept for `refreshMs`, so tokens
 * name the collection as it is now. A collection not known is looked up again at once: it may
 * have been created a moment ago by a first write.
 */
import type { LogClient } from '../shared/log-api.js';
import { isCollectionTopic, type TopicInfo } from '../shared/topics.js';

export class CollectionIncarnations {
  private known = new Map<string, number>();
  private readAtMs = -Infinity;
  /** The read of the topics under way; null when none is. */
  private reading: Promise<void> | null = null;
  /** The read that begins once the one under way ends, shared by `fresh` callers meanwhile. */
  private queued: Promise<void> | null = null;

  constructor(
    private readonly log: LogClient,
    private readonly refreshMs: number,
  ) {}

  /** The collection's incarnation; undefined when the log holds no such collection. */
  async of(collection: string): Promise<number | undefined> {
    if (!isCollectionTopic(collection)) return 0;
    if (!this.known.has(collection) || Date.now() - this.readAtMs > this.refreshMs) {
      const joined = this.reading !== null;
      await this.refresh();
      // A read already under way may have begun before the collection was created: one more.
      // A read begun here is recent enough; a second would only double a missing one's cost.
      if (joined && !this.known.has(collection)) await this.fresh(collection);
    }
    return this.known.get(collection);
  }

  /** The last known incarnation, without asking the log (0 for a collection not seen yet). */
  cached(collection: string): number {
    return this.known.get(collection) ?? 0;
  }

  /** Takes a topic list read elsewhere (the change feed reads one). */
  update(topics: readonly TopicInfo[]): void {
    this.known = new Map(topics.map((topic) => [topic.name, topic.incarnation ?? 0]));
    this.readAtMs = Date.now();
  }

  /**
   * The incarnation the log holds now, from a read of its topics that began after this call:
   * callers that arrive while one is under way share the next one.
   */
  async fresh(collection: string): Promise<number> {
    const start = () => {
      this.queued = null;
      return this.read();
    };
    // After a failed read too: its callers have its error, the next read starts afresh.
    this.queued ??= (this.reading ?? Promise.resolve()).then(start, start);
    await this.queued;
    return this.cached(collection);
  }

  /** Joins the read of the topics under way (or about to begin), or begins one. */
  refresh(): Promise<void> {
    return this.reading ?? this.queued ?? this.read();
  }

  private read(): Promise<void> {
    this.reading = this.log
      .topics()
      .then((topics) => this.update(topics))
      .finally(() => {
        this.reading = null;
      });
    return this.reading;
  }
}
