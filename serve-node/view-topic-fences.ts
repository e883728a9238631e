/**
 * Which topics a serve-node fences as views' (view-fence.ts), learnt from the views topic by the
 * rule of shared/topic-kinds.ts. A topic a look named as a view's stays one (until its drop here):
 * its partitions keep their epochs. A look records the kind of the topics the node tails and of
 * those asked about (a record of theirs carrying a fence header waits), and a drop here meanwhile
 * (`forget`) leaves the name to be asked about afresh, as a restarted node would. After a failed
 * read of the views topic, asks wait out a pause (doubling up to `retryMsMax`), so held partitions
 * do not read it again every turn.
 */
import type { LogClient } from '../shared/log-api.js';
import type { Logger } from '../shared/logger.js';
import { ViewCatalog, viewTopics } from '../shared/view-catalog.js';
import { TopicKinds, type TopicKind } from '../shared/topic-kinds.js';
import type { TopicFences } from './view-fence.js';

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
  private readonly kinds = new TopicKinds();
  /** Topics asked about whose answer has not come yet. */
  private readonly asked = new Set<string>();
  private looking: Promise<void> | null = null;
  private retryAtMs = 0;
  private retryMs = RETRY_MS_MIN;

  constructor(
    log: LogClient,
    private readonly options: ViewTopicFencesOptions,
  ) {
    this.catalog = new ViewCatalog(log, options.readBytesMax);
  }

  of(topic: string): TopicKind {
    return this.kinds.of(topic);
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
    this.kinds.forget(topic);
  }

  /** One look at a time, each for every topic asked before it began. */
  private async lookAsked(): Promise<void> {
    while (this.asked.size > 0 && Date.now() >= this.retryAtMs) {
      await this.look([...this.asked]);
    }
  }

  /** Looks at the views topic now; `topics` that it does not name are collections'. */
  private async look(topics: readonly string[]): Promise<void> {
    const mark = this.kinds.lookBegins();
    try {
      const named = viewTopics(await this.catalog.current());
      const decided = this.kinds.decide(mark, named, topics, (topic) => this.options.tails(topic));
      for (const topic of decided) this.options.onDecided(topic);
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
}
