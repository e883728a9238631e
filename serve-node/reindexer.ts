/**
 * The background side of a settings change: steps of the replica's re-indexes (Replica.reindexStep,
 * table-builds.ts), one after another on the serving thread, each its own short transaction, so
 * reads and the apply loop go on between them. The loop runs while a re-index can take a step
 * and is started again after every applied answer (a settings record starts a re-index; a
 * collection whose LMDB lagged after a crash can go on once its fetcher caught it up), and after
 * a failed step, on a timer: a collection nobody writes to brings no applied answer. With no
 * re-index step to take, it deletes the rows of the tables re-indexes replaced
 * (retired-tables.ts), in steps of the same length.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { assert } from '../shared/assert.js';
import type { Logger } from '../shared/logger.js';
import type { Replica } from './replica.js';

/** After a failed step (a full disk, say), the loop tries again this long after, doubling. */
const RETRY_MS_MIN = 100;

export interface ReindexerOptions {
  replica(): Replica;
  /** Documents copied by one step (one transaction). */
  stepDocsMax: number;
  /** A step ends after the document that takes it past this long. */
  stepMsMax: number;
  /** The longest pause before trying again after a failed step (the node's retryMsMax). */
  retryMsMax: number;
  /** A snapshot copying the stores: steps wait for it, as the apply loop does. */
  paused(): Promise<unknown> | null;
  /** A collection's new index took over: reads waiting for its settings may go. */
  onSwapped(collection: string): void;
  logger: Logger;
}

export class Reindexer {
  private running: Promise<void> | null = null;
  /** Asked to look again while a run was under way. */
  private again = false;
  private stopped = false;
  /** The next try after a failed step, and how long the one after would wait. */
  private retry: NodeJS.Timeout | undefined;
  private retryMs = RETRY_MS_MIN;

  constructor(private readonly options: ReindexerOptions) {
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
      let step;
      let retiredRows: number | null = null;
      try {
        step = replica().reindexStep(stepDocsMax, stepMsMax);
        // With no re-index step to take, the rows of tables they replaced are deleted.
        if (step === null) retiredRows = replica().retiredRowsStep(stepMsMax);
      } catch (error) {
        // The step rolled back: the loop starts again after a pause, or at the next applied
        // answer, whichever comes first.
        logger.error({ err: error, retryMs: this.retryMs }, 're-index step failed');
        this.retry = setTimeout(() => {
          this.retry = undefined;
          this.kick();
        }, this.retryMs);
        this.retry.unref();
        this.retryMs = Math.min(this.retryMs * 2, this.options.retryMsMax);
        return;
      }
      this.retryMs = RETRY_MS_MIN;
      if (step === null && retiredRows === null) return;
      if (step?.swapped) {
        logger.info({ collection: step.collection }, 're-indexed with the new settings');
        onSwapped(step.collection);
      }
      // Between steps, the event loop: reads and applied answers go first.
      await nextTurn();
    }
  }
}
