/**
 * The search store's work in the background, one step after another on the serving thread, each
 * its own short transaction, so reads and the apply loop go on between them:
 * 1. merging the segments of the top-k lists that writes left due a merge (topk-segments.ts),
 *    as they come, first: a search and a write read a run a segment, and every apply and every
 *    re-index step adds a segment to each listed term it touches, so a long re-index must not
 *    hold them back;
 * 2. with none due, the re-indexes after settings changes (Replica.reindexStep, table-builds.ts);
 * 3. with none to step, deleting the rows of the tables re-indexes replaced (retired-tables.ts);
 * 4. with none of those, merging a table's FTS5 segments once writes have paused
 *    (segment-merges.ts);
 * 5. with none due either, merging each top-k list of several segments into one where its
 *    smaller segments hold `mergeWrittenPercent` of its largest, so a search reads one run a
 *    frequency while writes pause;
 * 6. with nothing to merge, giving free pages back to the file system (free-pages.ts).
 * The loop runs while a step can be taken and is started again after every applied answer (a
 * settings record starts a re-index; a collection whose LMDB lagged after a crash can go on once
 * its fetcher caught it up), on a timer after a failed step (a collection nobody writes to brings
 * no applied answer), and on a timer when a merge waits for writes to pause.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { assert } from '../shared/assert.js';
import type { Logger } from '../shared/logger.js';
import type { Replica } from './replica.js';
import type { MergePolicy } from './segment-merges.js';

/** After a failed step (a full disk, say), the loop tries again this long after, doubling. */
const RETRY_MS_MIN = 100;

export interface BackgroundStepsOptions {
  replica(): Replica;
  /** Documents copied by one step (one transaction). */
  stepDocsMax: number;
  /** A step ends after the document that takes it past this long. */
  stepMsMax: number;
  /** The longest pause before trying again after a failed step (the node's retryMsMax). */
  retryMsMax: number;
  /** When a table's segments are merged, and how long a merge step runs at most. */
  merges: MergePolicy & { stepMsMax: number };
  /** A snapshot copying the stores: steps wait for it, as the apply loop does. */
  paused(): Promise<unknown> | null;
  /** A collection's new index took over: reads waiting for its settings may go. */
  onSwapped(collection: string): void;
  logger: Logger;
}

export class BackgroundSteps {
  private running: Promise<void> | null = null;
  /** Asked to look again while a run was under way. */
  private again = false;
  private stopped = false;
  /** The next run after a failed step or when a merge may start, and how long a retry waits. */
  private retry: NodeJS.Timeout | undefined;
  private retryMs = RETRY_MS_MIN;
  /** The segment merge under way, for its log lines. */
  private merging: { collection: string; startedMs: number; steps: number } | null = null;

  constructor(private readonly options: BackgroundStepsOptions) {
    // A step of no documents would never reach the end of a collection.
    assert(
      options.stepDocsMax >= 1,
      `reindexStepDocsMax must be at least 1, not ${options.stepDocsMax}`,
    );
  }

  /** Takes steps until none can be taken; a call during a run makes it look once more. */
  kick(): void {
    if (this.stopped) return;
    if (this.running !== null) {
      this.again = true;
      return;
    }
    clearTimeout(this.retry);
    this.retry = undefined;
    this.running = this.run().finally(() => {
      this.running = null;
      if (this.again) this.kick();
    });
  }

  /** Ends the loop after the step under way (which is synchronous, so already done). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    await this.running;
  }

  private async run(): Promise<void> {
    const { replica, stepDocsMax, stepMsMax, paused, onSwapped, logger } = this.options;
    this.again = false;
    while (!this.stopped) {
      await paused();
      if (this.stopped) return;
      let step: ReturnType<Replica['reindexStep']> = null;
      let retiredRows: number | null = null;
      // The terms a top-k merge step took (null: none was due), whether or not it rewrote a list.
      let topkTaken: number | null = null;
      let merge = null;
      let freed = null;
      try {
        topkTaken = replica().topkMergeStep(stepMsMax);
        if (topkTaken === null) step = replica().reindexStep(stepDocsMax, stepMsMax);
        // With no re-index step to take, the rows of tables they replaced are deleted.
        if (topkTaken === null && step === null) {
          retiredRows = replica().retiredRowsStep(stepMsMax);
        }
        if (step === null && retiredRows === null && topkTaken === null) {
          merge = replica().mergeStep(this.options.merges.stepMsMax, this.options.merges);
          if (merge === null) {
            const { writtenPercent } = this.options.merges;
            // Whole lists are merged once writes pause, as FTS5's segments are: mid-load each
            // would be rewritten again at the next write to it.
            const wait = replica().quietWaitMs(this.options.merges);
            if (wait > 0 && replica().topkMergesDue(this.options.merges)) {
              return this.runAfter(wait);
            }
            topkTaken = replica().topkMergeStep(stepMsMax, writtenPercent);
            // With nothing left to merge, the pages merges freed go back to the file system.
            if (topkTaken === null) {
              freed = replica().freePagesStep(this.options.merges.stepMsMax, this.options.merges);
            }
          }
        }
      } catch (error) {
        // The step rolled back: the loop starts again after a pause, or at the next applied
        // answer, whichever comes first.
        logger.error({ err: error, retryMs: this.retryMs }, 'background step failed');
        this.runAfter(this.retryMs);
        this.retryMs = Math.min(this.retryMs * 2, this.options.retryMsMax);
        return;
      }
      this.retryMs = RETRY_MS_MIN;
      // A merge is due, or pages are free, once writes pause: look again then, or at the next
      // applied answer.
      if (merge !== null && 'waitMs' in merge) return this.runAfter(merge.waitMs);
      if (freed !== null && 'waitMs' in freed) return this.runAfter(freed.waitMs);
      const tookNone = step === null && retiredRows === null && topkTaken === null;
      if (tookNone && merge === null && freed === null) return;
      if (step?.swapped) {
        logger.info({ collection: step.collection }, 're-indexed with the new settings');
        onSwapped(step.collection);
      }
      if (merge !== null) this.logMerge(merge.merged);
      // Between steps, the event loop: reads and applied answers go first.
      await nextTurn();
    }
  }

  /** A line when a merge starts and one when it ends; a merge of one step says nothing. */
  private logMerge({ collection, finished }: { collection: string; finished: boolean }): void {
    const { logger } = this.options;
    if (this.merging?.collection !== collection) {
      this.merging = { collection, startedMs: performance.now(), steps: 0 };
    }
    this.merging.steps += 1;
    if (!finished) {
      if (this.merging.steps === 1) {
        logger.info({ collection }, 'merging the segments of the search index');
      }
      return;
    }
    if (this.merging.steps > 1) {
      const ms = Math.round(performance.now() - this.merging.startedMs);
      logger.info(
        { collection, steps: this.merging.steps, ms },
        'merged the search index segments',
      );
    }
    this.merging = null;
  }

  private runAfter(ms: number): void {
    this.retry = setTimeout(() => {
      this.retry = undefined;
      this.kick();
    }, ms);
    this.retry.unref();
  }
}
