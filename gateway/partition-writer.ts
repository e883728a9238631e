/**
 * One topic-partition's idempotent producer (a collection's partition, or the settings topic's).
 * Writes that arrive together are coalesced into one batch (a short linger, bounded by count and
 * bytes); one batch is in flight at a time, so while the log fsyncs it the next one fills up. Each
 * batch carries this writer's producer identity (from the log's InitProducerId, asked for before
 * the first batch) and the sequence of its first record (sequences count records, as Kafka's
 * idempotent producers number them: a batch of 3 after one of 2 starts at 2), so retrying a batch
 * after a timeout never appends it twice.
 *
 * Sequence bookkeeping, the part that must never drift from the log's:
 * - acknowledged (or acknowledged as a duplicate): the log holds the batch at sequence n with its
 *   c records, the next starts at n + c;
 * - rejected with a 4xx (the batch is invalid) before any attempt went unanswered: the log did not
 *   take it, n is reused;
 * - refused before the log could take it (the log-node refused the connection, so the request never
 *   reached it; or 503 `append_queue_full`, raised before the batch is queued): retried under the
 *   same id and n, as any failure is; when every attempt was refused like this, the log holds
 *   nothing under n, so n is reused and the writers are told the write was not stored (503
 *   `log_unavailable` or `append_queue_full`);
 * - no definitive answer after every attempt, or a 4xx or a refusal after an attempt that went
 *   unanswered (that attempt may have been appended): the log may or may not hold n, so nothing
 *   after it can be numbered safely; the writer takes a fresh producer identity and starts again at 0,
 *   and the batch's writers are told the outcome is unknown (503 `write_outcome_unknown`);
 * - acknowledged as a duplicate although n was never sent before: the log holds another batch
 *   under n, so this one is treated as unknown too, never acknowledged with another's offsets;
 * - `sequence_gap` or `unknown_producer` (the log forgot this producer, e.g. it expired): the batch
 *   was not appended, so it is re-sent at once under a fresh producer id;
 * - `sequence_too_old` (the log is past n and no longer remembers it): n may be this batch, so it
 *   is treated like no answer at all;
 * - past SEQUENCE_MAX (2^31 - 1, the format's int32; about 25 days at 1,000 records/s): the
 *   writer takes a fresh producer id and starts again at 0.
 *
 * Writes are taken whole or not at all: `admit` checks every partition a request touches before
 * `write` queues any of them, so a request turned away leaves nothing queued.
 */
import { assert } from '../shared/assert.js';
import { compressBatch, encodeBatch, SEQUENCE_MAX, type LogRecord } from '../shared/batch-codec.js';
import { CODECS } from '../shared/batch-compression.js';
import { TailbaseError, unavailable } from '../shared/errors.js';
import { connectionRefused } from '../shared/internal-http.js';
import type { LogClient, ProducerIdentity } from '../shared/log-api.js';
import type { Logger } from '../shared/logger.js';
import { RECORD_OVERHEAD_BYTES_MAX, type WriterConfig } from './config.js';

interface PendingWrite {
  record: LogRecord;
  bytes: number;
  resolve(offset: number): void;
  reject(error: unknown): void;
}

export interface BatchObserver {
  (topic: string, partition: number, records: number, bytes: number, durationMs: number): void;
}

/** A record's bytes in a batch, at most: what the batch and pending bounds count. */
export function recordBytes(record: LogRecord): number {
  return RECORD_OVERHEAD_BYTES_MAX + Buffer.byteLength(record.key) + (record.value?.length ?? 0);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Whether the log certainly did not append the batch: `final` when a retry would be refused too
 * (a 4xx, a node refusing the call), `retryable` when it may be taken later (the log-node refused
 * the connection, its append queue was full, or its disk was: a 507 `disk_full` comes after the
 * node cut the round's bytes off again and forgot its batches), null when the log may hold it (no
 * answer, a connection cut after the request left, `partition_failed` mid-write, any other 5xx).
 */
function refusal(error: unknown): 'final' | 'retryable' | null {
  if (!(error instanceof TailbaseError)) return null;
  if ((error.status >= 400 && error.status < 500) || REFUSING_LOG_CODES.has(error.code)) {
    return 'final';
  }
  if (NOT_STORED_CODES.has(error.code) || connectionRefused(error)) return 'retryable';
  return null;
}

/** The log's refusals of a topic (its settings, checked before any append is sent). */
const REFUSING_LOG_CODES = new Set([
  'cluster_misconfigured',
  'topic_misconfigured',
  'topics_unverified',
]);

/** Refusals after which the log-node holds nothing of the batch. */
const NOT_STORED_CODES = new Set(['append_queue_full', 'disk_full']);

/** What the writers of a batch the log never took hear: retry later, nothing was stored. */
function notStored(topic: string, partition: number, error: TailbaseError): TailbaseError {
  if (error.code === 'disk_full') {
    return new TailbaseError(
      507,
      'disk_full',
      `the log-node's disk is full; ${topic} partition ${partition}'s batch was not stored, ` +
        'retry once there is room',
      { ...error.details, topic, partition },
      { cause: error },
    );
  }
  if (error.code === 'append_queue_full') {
    return new TailbaseError(
      503,
      'append_queue_full',
      `the log-node's append queue is full; ${topic} partition ${partition}'s batch was not ` +
        'stored, retry later',
      { ...error.details, topic, partition },
      { cause: error },
    );
  }
  return new TailbaseError(
    503,
    'log_unavailable',
    `no log-node took the connection; ${topic} partition ${partition}'s batch was not stored, ` +
      'retry later',
    { topic, partition },
    { cause: error },
  );
}

export class PartitionWriter {
  /** Asked of the log before the first batch, and again whenever the writer must start over. */
  private producer: ProducerIdentity | null = null;
  private nextSequence = 0;
  private queue: PendingWrite[] = [];
  private queuedBytes = 0;
  private inFlight: Promise<void> | null = null;
  /** Cancels the pending linger, while one is pending. */
  private linger: (() => void) | null = null;
  private closed = false;

  /** Bytes of writes queued here now, sent or waiting (bounded by pendingBytesMax). */
  get pendingBytes(): number {
    return this.queuedBytes;
  }

  constructor(
    readonly topic: string,
    readonly partition: number,
    private readonly log: LogClient,
    private readonly config: WriterConfig,
    private readonly logger: Logger,
    private readonly observe: BatchObserver = () => {},
    /** The codec its batches are compressed with; deflating runs on libuv's thread pool. */
    private readonly codec: number = CODECS.none,
  ) {}

  /** Throws (503 `shutting_down` or `overloaded`) unless `write` would take these records now. */
  admit(records: readonly LogRecord[]): void {
    if (this.closed) throw unavailable('shutting_down', 'the gateway is shutting down');
    const total = records.reduce((sum, record) => sum + recordBytes(record), 0);
    if (this.queuedBytes > 0 && this.queuedBytes + total > this.config.pendingBytesMax) {
      throw unavailable(
        'overloaded',
        `${this.topic} partition ${this.partition} has too many pending writes`,
        {
          topic: this.topic,
          partition: this.partition,
          limit: 'pendingBytesMax',
          max: this.config.pendingBytesMax,
        },
      );
    }
  }

  /** Queues records (in order) and resolves with the offset of each once the log has fsynced it. */
  write(records: LogRecord[]): Promise<number[]> {
    try {
      this.admit(records);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.enqueue(records);
  }

  /** `write` for records `admit` has just taken (a request's every partition is asked first). */
  enqueue(records: LogRecord[]): Promise<number[]> {
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
      this.linger?.();
      this.linger = null;
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
      this.linger?.();
      this.linger = null;
      this.sendNext();
      return;
    }
    this.linger ??= lingerFor(this.config.lingerMs, () => this.sendIfIdle());
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
      this.logger.error({ ...this.where(), err: error }, 'batch not sent');
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
    // Sequences count records (Kafka's idempotence): the batch takes n..n + count − 1.
    if (this.nextSequence + records.length - 1 > SEQUENCE_MAX) this.rotateProducer();
    let encoded = await this.encode(records);
    let lastError: unknown;
    /** An attempt of this producer id and sequence went unanswered: the log may hold it. */
    let unanswered = false;
    for (let attempt = 1; attempt <= this.config.appendAttemptsMax; attempt++) {
      try {
        const result = await this.log.append(
          this.topic,
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
        this.nextSequence += records.length;
        batch.forEach((w, i) => w.resolve(result.baseOffset + i));
        this.observe(
          this.topic,
          this.partition,
          batch.length,
          bytes,
          performance.now() - startedMs,
        );
        return;
      } catch (error) {
        lastError = error;
        const code = error instanceof TailbaseError ? error.code : null;
        if (code === 'sequence_gap' || code === 'unknown_producer') {
          this.logger.warn(this.where(), 'log forgot this producer; new identity');
          this.rotateProducer();
          encoded = await this.encode(records);
          unanswered = false;
          continue;
        }
        if (code === 'sequence_too_old') break;
        const refused = refusal(error);
        if (refused === 'final') {
          if (unanswered) break;
          batch.forEach((w) => w.reject(error));
          return;
        }
        if (refused === null) unanswered = true;
        if (attempt < this.config.appendAttemptsMax) {
          await sleep(this.config.appendRetryBackoffMs * attempt);
        }
      }
    }
    if (!unanswered && refusal(lastError) === 'retryable') {
      // Every attempt under this id and n was refused before the log could take it: n is free.
      this.logger.warn({ ...this.where(), err: lastError }, 'append refused; not stored');
      const error = notStored(this.topic, this.partition, lastError as TailbaseError);
      batch.forEach((w) => w.reject(error));
      return;
    }
    this.logger.error({ ...this.where(), err: lastError }, 'append outcome unknown');
    this.rotateProducer();
    const unknown = new TailbaseError(
      503,
      'write_outcome_unknown',
      'the log did not confirm the write in time; it may or may not have been stored',
      this.where(),
    );
    batch.forEach((w) => w.reject(unknown));
  }

  /**
   * The records as this producer's next batch. A failure to get an identity rejects the writers
   * like any batch the log never took (nothing was numbered, so the sequence is not used up).
   */
  private async encode(records: readonly LogRecord[]): Promise<Buffer> {
    this.producer ??= await this.log.initProducerId();
    const batch = encodeBatch(records, {
      producerId: this.producer.producerId,
      producerEpoch: this.producer.producerEpoch,
      baseSequence: this.nextSequence,
    });
    return compressBatch(batch, this.codec);
  }

  /** Starts over under a new identity, asked of the log before the next batch. */
  private rotateProducer(): void {
    this.producer = null;
    this.nextSequence = 0;
  }

  private where(): { topic: string; partition: number } {
    return { topic: this.topic, partition: this.partition };
  }
}

/**
 * Runs `then` after `lingerMs`; at 0, once the current turn of the event loop is over (so the
 * writes parsed in the same turn still share a batch): Node runs a 0 ms timer after 1 ms, which
 * made every write to an idle partition wait that long. Answers the cancel.
 */
function lingerFor(lingerMs: number, then: () => void): () => void {
  if (lingerMs === 0) {
    const immediate = setImmediate(then);
    return () => clearImmediate(immediate);
  }
  const timer = setTimeout(then, lingerMs);
  return () => clearTimeout(timer);
}
