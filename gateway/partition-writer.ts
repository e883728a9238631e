/**
 * One partition's idempotent producer. Writes that arrive together are coalesced into one batch
 * (a short linger, bounded by count and bytes); one batch is in flight at a time, so while the
 * log fsyncs it the next one fills up. Each batch carries this writer's producer id and the next
 * batch sequence (0, 1, 2, ...), so retrying a batch after a timeout never appends it twice.
 *
 * Sequence bookkeeping, the part that must never drift from the log's:
 * - acknowledged (or acknowledged as a duplicate): the log holds sequence n, the next is n + 1;
 * - rejected with a 4xx (the batch is invalid) before any attempt went unanswered: the log did not
 *   take it, n is reused;
 * - no definitive answer after every attempt, or a 4xx after an attempt that went unanswered (that
 *   attempt may have been appended): the log may or may not hold n, so nothing after it can be
 *   numbered safely; the writer takes a fresh producer id and starts again at 0, and the batch's
 *   writers are told the outcome is unknown (503 `write_outcome_unknown`);
 * - acknowledged as a duplicate although n was never sent before: the log holds another batch
 *   under n, so this one is treated as unknown too, never acknowledged with another's offsets;
 * - `sequence_gap` or `unknown_producer` (the log forgot this producer, e.g. it expired): the batch
 *   was not appended, so it is re-sent at once under a fresh producer id;
 * - `sequence_too_old` (the log is past n and no longer remembers it): n may be this batch, so it
 *   is treated like no answer at all;
 * - past SEQUENCE_MAX (2^31 - 1, the format's int32; about 25 days at 1,000 batches/s): the writer
 *   takes a fresh producer id and starts again at 0.
 *
 * Writes are taken whole or not at all: `admit` checks every partition a request touches before
 * `write` queues any of them, so a request turned away leaves nothing queued.
 */
import { ulid, ulidToUUID } from 'ulid';
import { assert } from '../shared/assert.js';
import {
  encodeBatch,
  RECORD_OVERHEAD_BYTES,
  SEQUENCE_MAX,
  type LogRecord,
} from '../shared/batch-codec.js';
import { TailbaseError, unavailable } from '../shared/errors.js';
import type { LogClient } from '../shared/log-client.js';
import type { Logger } from '../shared/logger.js';
import type { WriterConfig } from './config.js';

interface PendingWrite {
  record: LogRecord;
  bytes: number;
  resolve(offset: number): void;
  reject(error: unknown): void;
}

export interface BatchObserver {
  (partition: number, records: number, bytes: number, durationMs: number): void;
}

export function newProducerId(): Uint8Array {
  return Buffer.from(ulidToUUID(ulid()).replace(/-/g, ''), 'hex');
}

export function recordBytes(record: LogRecord): number {
  return (
    RECORD_OVERHEAD_BYTES +
    Buffer.byteLength(record.collection) +
    Buffer.byteLength(record.key) +
    (record.value?.length ?? 0)
  );
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The log refused the batch, so it holds none of it: a 4xx, or a node refusing the call. */
function isDefinitiveRejection(error: unknown): boolean {
  if (!(error instanceof TailbaseError)) return false;
  return (error.status >= 400 && error.status < 500) || error.code === 'cluster_misconfigured';
}

export class PartitionWriter {
  private producerId = newProducerId();
  private nextSequence = 0;
  private queue: PendingWrite[] = [];
  private queuedBytes = 0;
  private inFlight: Promise<void> | null = null;
  private linger: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    readonly partition: number,
    private readonly log: LogClient,
    private readonly config: WriterConfig,
    private readonly logger: Logger,
    private readonly observe: BatchObserver = () => {},
  ) {}

  /** Throws (503 `shutting_down` or `overloaded`) unless `write` would take these records now. */
  admit(records: readonly LogRecord[]): void {
    if (this.closed) throw unavailable('shutting_down', 'the gateway is shutting down');
    const total = records.reduce((sum, record) => sum + recordBytes(record), 0);
    if (this.queuedBytes > 0 && this.queuedBytes + total > this.config.pendingBytesMax) {
      throw unavailable('overloaded', `partition ${this.partition} has too many pending writes`, {
        partition: this.partition,
        limit: 'pendingBytesMax',
        max: this.config.pendingBytesMax,
      });
    }
  }

  /** Queues records (in order) and resolves with the offset of each once the log has fsynced it. */
  write(records: LogRecord[]): Promise<number[]> {
    try {
      this.admit(records);
    } catch (error) {
      return Promise.reject(error);
    }
    const sizes = records.map(recordBytes);
    const total = sizes.reduce((a, b) => a + b, 0);
    const offsets = records.map(
      (record, i) =>
        new Promise<number>((resolve, reject) => {
          this.queue.push({ record, bytes: sizes[i], resolve, reject });
        }),
    );
    this.queuedBytes += total;
    this.schedule();
    return Promise.all(offsets);
  }

  /** Stops taking writes and resolves once every queued one has been answered. */
  async close(): Promise<void> {
    this.closed = true;
    while (this.queue.length > 0 || this.inFlight) {
      if (this.linger) {
        clearTimeout(this.linger);
        this.linger = null;
      }
      if (!this.inFlight) this.sendNext();
      await this.inFlight;
    }
  }

  private schedule(): void {
    if (this.inFlight || this.queue.length === 0) return;
    const full =
      this.queue.length >= this.config.batchRecordsMax ||
      this.queuedBytes >= this.config.batchBytesMax;
    if (full) {
      if (this.linger) clearTimeout(this.linger);
      this.linger = null;
      this.sendNext();
      return;
    }
    this.linger ??= setTimeout(() => this.sendIfIdle(), this.config.lingerMs);
  }

  private sendIfIdle(): void {
    this.linger = null;
    if (!this.inFlight && this.queue.length > 0) this.sendNext();
  }

  private sendNext(): void {
    assert(this.inFlight === null, 'one batch in flight per partition');
    let bytes = 0;
    let count = 0;
    while (
      count < this.queue.length &&
      count < this.config.batchRecordsMax &&
      (count === 0 || bytes + this.queue[count].bytes <= this.config.batchBytesMax)
    ) {
      bytes += this.queue[count].bytes;
      count++;
    }
    const batch = this.queue.splice(0, count);
    this.queuedBytes -= bytes;
    // A throw before the first attempt (encoding) must answer the writers, not go unhandled.
    const appended = this.append(batch, bytes).catch((error: unknown) => {
      this.logger.error({ partition: this.partition, err: error }, 'batch not sent');
      batch.forEach((w) => w.reject(error));
    });
    this.inFlight = appended.finally(() => {
      this.inFlight = null;
      // These writes already waited out a whole append: no extra linger for them.
      if (this.queue.length > 0) this.sendNext();
    });
  }

  private async append(batch: PendingWrite[], bytes: number): Promise<void> {
    const startedMs = performance.now();
    const records = batch.map((w) => w.record);
    if (this.nextSequence > SEQUENCE_MAX) this.rotateProducer();
    let encoded = encodeBatch(records, {
      producerId: this.producerId,
      baseSequence: this.nextSequence,
    });
    let lastError: unknown;
    /** An attempt of this producer id and sequence went unanswered: the log may hold it. */
    let unanswered = false;
    for (let attempt = 1; attempt <= this.config.appendAttemptsMax; attempt++) {
      try {
        const result = await this.log.append(
          this.partition,
          encoded,
          AbortSignal.timeout(this.config.appendTimeoutMs),
        );
        if (result.duplicate && !unanswered) {
          lastError = new Error(`the log holds another batch under sequence ${this.nextSequence}`);
          break;
        }
        assert(
          result.lastOffset - result.baseOffset === batch.length - 1,
          'the log answered one offset per record',
        );
        this.nextSequence++;
        batch.forEach((w, i) => w.resolve(result.baseOffset + i));
        this.observe(this.partition, batch.length, bytes, performance.now() - startedMs);
        return;
      } catch (error) {
        lastError = error;
        const code = error instanceof TailbaseError ? error.code : null;
        if (code === 'sequence_gap' || code === 'unknown_producer') {
          this.logger.warn({ partition: this.partition }, 'log forgot this producer; new id');
          this.rotateProducer();
          encoded = encodeBatch(records, { producerId: this.producerId, baseSequence: 0 });
          unanswered = false;
          continue;
        }
        if (code === 'sequence_too_old') break;
        if (isDefinitiveRejection(error)) {
          if (unanswered) break;
          batch.forEach((w) => w.reject(error));
          return;
        }
        unanswered = true;
        if (attempt < this.config.appendAttemptsMax) {
          await sleep(this.config.appendRetryBackoffMs * attempt);
        }
      }
    }
    this.logger.error({ partition: this.partition, err: lastError }, 'append outcome unknown');
    this.rotateProducer();
    const unknown = new TailbaseError(
      503,
      'write_outcome_unknown',
      'the log did not confirm the write in time; it may or may not have been stored',
      { partition: this.partition },
    );
    batch.forEach((w) => w.reject(unknown));
  }

  private rotateProducer(): void {
    this.producerId = newProducerId();
    this.nextSequence = 0;
  }
}
