/**
 * Which topics a serve-node fences as views' (view-fence.ts), learnt from the views topic. A topic
 * a look named as a view's stays one (until its drop here): its partitions keep their epochs. A
 * topic asked about (one of its records carries a fence header) is a collection's for good once a
 * look that began after the ask does not name it: a view's topic is named in the views topic before
 * its processor writes it (a redefinition's topic is created just before its record, empty), so
 * what such a look misses is no view's.
 */
import type { LogClient } from '../shared/log-api.js';
import type { Logger } from '../shared/logger.js';
import { ViewCatalog, viewTopics } from '../shared/view-catalog.js';
import type { TopicFence, TopicFences } from './view-fence.js';

export class ViewTopicFences implements TopicFences {
  private readonly catalog: ViewCatalog;
  private readonly views = new Set<string>();
  private readonly collections = new Set<string>();
  /** Topics asked about whose answer has not come yet. */
  private readonly asked = new Set<string>();

  constructor(
    log: LogClient,
    /** Bytes one read of the views topic asks for. */
    readBytesMax: number,
    private readonly logger: Logger,
    /** After a look decided the kind of `topic`, which was asked about. */
    private readonly onDecided: (topic: string) => void,
  ) {
    this.catalog = new ViewCatalog(log, readBytesMax);
  }

  of(topic: string): TopicFence {
    if (this.views.has(topic)) return 'view';
    return this.collections.has(topic) ? 'collection' : 'unknown';
  }

  ask(topic: string): void {
    if (this.asked.has(topic) || this.of(topic) !== 'unknown') return;
    this.asked.add(topic);
    void this.look([topic]);
  }

  /** Looks at the views topic now; `topics` that it does not name are collections'. */
  async look(topics: readonly string[] = []): Promise<void> {
    try {
      const named = viewTopics(await this.catalog.current());
      for (const topic of named) this.views.add(topic);
      for (const topic of topics) {
        if (!named.has(topic)) this.collections.add(topic);
        this.onDecided(topic);
      }
    } catch (error) {
      this.logger.warn({ err: error, topics }, 'reading the views topic failed; asking again');
    } finally {
      for (const topic of topics) this.asked.delete(topic);
    }
  }

  /** A topic dropped here: a topic of the name created later is asked about afresh. */
  forget(topic: string): void {
    this.views.delete(topic);
    this.collections.delete(topic);
  }
}
