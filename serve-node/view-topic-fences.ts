/**
 * Which topics a serve-node fences as views' (view-fence.ts), learnt from the views topic. A topic
 * a look named as a view's stays one (until its drop here): its partitions keep their epochs. A
 * topic asked about (one of its records carries a fence header) is a collection's for good once a
 * look that began after the ask does not name it: a view's topic is named in the views topic before
 * its processor writes it (a redefinition's topic is created just before its record, empty), so
 * what such a look misses is no view's.
 *
 * A decision holds for the topic of the name as it was when the look began: a drop here meanwhile
 * (`forget`) makes the look record nothing of it, so a topic created later under the name is asked
 * about afresh, as a restarted node would. After a failed read of the views topic, asks wait out a
 * pause (doubling up to `retryMsMax`), so held partitions do not read it again every turn.
 */
import type { LogClient } from '../shared/log-api.js';
import type { Logger } from '../shared/logger.js';
import { ViewCatalog, viewTopics } from '../shared/view-catalog.js';
import type { TopicFence, TopicFences } from './view-fence.js';

/** The first pause after a failed read of the views topic; it doubles up to `retryMsMax`. */
const RETRY_MS_MIN = 50;

export interface ViewTopicFencesOptions {
  /** Bytes one read of the views topic asks for. */
  readBytesMax: number;
  /** The longest pause after a failed read of the views topic before asks read it again. */
  retryMsMax: number;
  logger: Logger;
  /** Whether the node tails the topic: a look records the kind of those and of the asked ones. */
  tails(topic: string): boolean;
  /** After a look decided the kind of `topic`, which was asked about. */
  onDecided(topic: string): void;
}

export class ViewTopicFences implements TopicFences {
  private readonly catalog: ViewCatalog;
  private readonly views = new Set<string>();
  private readonly collections = new Set<string>();
  /** Topics asked about whose answer has not come yet. */
  private readonly asked = new Set<string>();
  /** Drops here of each topic name (`forget`): a look records nothing of a name dropped since it began. */
  private readonly generations = new Map<string, number>();
  private looking: Promise<void> | null = null;
  private retryAtMs = 0;
  private retryMs = RETRY_MS_MIN;

  constructor(
    log: LogClient,
    private readonly options: ViewTopicFencesOptions,
  ) {
    this.catalog = new ViewCatalog(log, options.readBytesMax);
  }

  of(topic: string): TopicFence {
    if (this.views.has(topic)) return 'view';
    return this.collections.has(topic) ? 'collection' : 'unknown';
  }

  ask(topic: string): void {
    if (this.of(topic) !== 'unknown' || Date.now() < this.retryAtMs) return;
    this.asked.add(topic);
    this.looking ??= this.lookAsked().finally(() => {
      this.looking = null;
    });
  }

  /** A topic dropped here: a topic of the name created later is asked about afresh. */
  forget(topic: string): void {
    this.views.delete(topic);
    this.collections.delete(topic);
    this.generations.set(topic, this.generation(topic) + 1);
  }

  /** One look at a time, each for every topic asked before it began. */
  private async lookAsked(): Promise<void> {
    while (this.asked.size > 0 && Date.now() >= this.retryAtMs) {
      await this.look([...this.asked]);
    }
  }

  /** Looks at the views topic now; `topics` that it does not name are collections'. */
  private async look(topics: readonly string[]): Promise<void> {
    const began = new Map(this.generations);
    const unchanged = (topic: string) => this.generation(topic) === (began.get(topic) ?? 0);
    try {
      const named = viewTopics(await this.catalog.current());
      for (const topic of named) {
        if (unchanged(topic) && (this.options.tails(topic) || topics.includes(topic))) {
          this.views.add(topic);
        }
      }
      for (const topic of topics) {
        if (!unchanged(topic)) continue;
        if (!named.has(topic)) this.collections.add(topic);
        this.options.onDecided(topic);
      }
      this.retryMs = RETRY_MS_MIN;
    } catch (error) {
      this.retryAtMs = Date.now() + this.retryMs;
      this.options.logger.warn(
        { err: error, topics, retryMs: this.retryMs },
        'reading the views topic failed; asking again after a pause',
      );
      this.retryMs = Math.min(this.retryMs * 2, this.options.retryMsMax);
    } finally {
      for (const topic of topics) this.asked.delete(topic);
    }
  }

  private generation(topic: string): number {
    return this.generations.get(topic) ?? 0;
  }
}
