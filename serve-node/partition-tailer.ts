/**
 * One tailer per hosted partition: read from the checkpoint, apply each read answer, long-poll
 * when caught up, back off (bounded) when the log fails. A checkpoint behind the log start
 * (retention removed what it needs) is reported to the node, which wipes and rebuilds.
 */
import { readBatchHeader } from '../shared/batch-codec.js';
import type { LogClient, ReadResult } from '../shared/log-client.js';
import { TailbaseError } from '../shared/errors.js';
import type { PartitionState } from '../shared/serve-client.js';
import type { Logger } from '../shared/logger.js';
import { ApplyRate } from './apply-rate.js';
import type { Replica } from './replica.js';

export interface TailerOptions {
  partition: number;
  log: LogClient;
  replica: () => Replica;
  logReadBytesMax: number;
  logWaitMs: number;
  retryMsMax: number;
  logger: Logger;
  /** After each commit: wakes waiting reads. */
  onApplied(partition: number): void;
  /** The checkpoint is older than the log start. */
  onOutOfRange(partition: number, detail: string): void;
  rebuilding: boolean;
}

const RETRY_MS_MIN = 50;

export class PartitionTailer {
  readonly partition: number;
  state: PartitionState;
  logEndOffset = 0;
  /** Set by the first successful read: until then the lag is unknown. */
  reachedLog = false;
  error: string | undefined;
  readonly rate = new ApplyRate();
  private readonly abort = new AbortController();
  private readonly done: Promise<void>;

  constructor(private readonly options: TailerOptions) {
    this.partition = options.partition;
    this.state = options.rebuilding ? 'rebuilding' : 'replaying';
    this.done = this.run();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.done;
    this.state = 'stopped';
  }

  private async run(): Promise<void> {
    const { partition, log, logger } = this.options;
    const signal = this.abort.signal;
    // The first read does not long-poll, so the lag (and readiness) is known at once.
    const read = (offset: number) =>
      log.read(partition, offset, {
        maxBytes: this.options.logReadBytesMax,
        waitMs: this.reachedLog ? this.options.logWaitMs : 0,
        signal,
      });
    let retryMs = RETRY_MS_MIN;
    // While one answer is applied, the next is already on its way from the log.
    let prefetch: { offset: number; answer: Promise<ReadResult> } | null = null;
    // Where the last apply left off: the stores' checkpoints are read only at the start and after
    // an error, not again (an LMDB get and an SQLite query) before every read.
    let known: number | null = null;
    while (!signal.aborted) {
      let offset: number | null = known;
      try {
        offset ??= this.options.replica().readFrom(partition);
        if (offset === null) {
          const offsets = await log.offsets();
          offset = offsets.find((entry) => entry.partition === partition)?.logStartOffset ?? 0;
        }
        const answer = await (prefetch?.offset === offset ? prefetch.answer : read(offset));
        prefetch = null;
        if (signal.aborted) break;
        this.logEndOffset = answer.endOffset;
        this.reachedLog = true;
        if (answer.batches.length > 0) {
          const next = offsetAfter(answer.batches);
          if (next < answer.endOffset) {
            prefetch = { offset: next, answer: read(next) };
            prefetch.answer.catch(() => undefined);
          }
          const result = await this.options.replica().apply(partition, offset, answer.batches);
          this.rate.record(result.records);
          this.options.onApplied(partition);
          offset = result.nextOffset;
        }
        known = offset;
        this.error = undefined;
        retryMs = RETRY_MS_MIN;
        if (offset >= answer.endOffset) this.state = 'tailing';
        else if (this.state === 'tailing') this.state = 'replaying';
      } catch (error) {
        prefetch = null;
        known = null;
        if (signal.aborted) break;
        if (
          error instanceof TailbaseError &&
          error.code === 'offset_out_of_range' &&
          offset !== null &&
          typeof error.details.logStartOffset === 'number' &&
          offset < error.details.logStartOffset
        ) {
          const detail = `checkpoint ${offset} is before the log start ${error.details.logStartOffset}`;
          this.options.onOutOfRange(partition, detail);
          return;
        }
        this.error = (error as Error).message;
        logger.warn({ partition, err: error }, 'tailing failed; retrying');
        await sleep(retryMs, signal);
        retryMs = Math.min(retryMs * 2, this.options.retryMsMax);
      }
    }
  }
}

/** The offset after the last whole batch of a read answer, from the headers alone. */
function offsetAfter(batches: Uint8Array): number {
  let next = 0;
  for (let at = 0; ;) {
    const header = readBatchHeader(batches, at);
    if (header === null || at + header.sizeBytes > batches.length) return next;
    next = header.baseOffset + header.lastOffsetDelta + 1;
    at += header.sizeBytes;
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
