/**
 * Tails the topic-partitions that one log-node stores, as a Kafka follower's fetcher does: one
 * multi-partition read for all of them (long-polling when every one is caught up), an answer
 * applied in bounded slices, each one group (one transaction per store), the event loop running
 * between them (apply-slices.ts). While an answer is applied, the next read is already on its
 * way if the log holds more. Topics join while it runs (`tail`): a read in flight is then
 * abandoned, so the next carries the new positions at once. Each
 * topic-partition keeps its own state, lag and error: one the log-node fails backs off alone
 * (bounded exponential); the log-node unreachable backs off all of them. A checkpoint behind the
 * log start (retention removed what it needs) is reported to the node, which wipes and rebuilds.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { readBatchHeader } from '../shared/batch-codec.js';
import { TailbaseError } from '../shared/errors.js';
import type { FetchOutcome } from '../shared/fetch-answer.js';
import type { FetchPosition, LogClient, TopicPartition } from '../shared/log-api.js';
import type { Logger } from '../shared/logger.js';
import type { PartitionState } from '../shared/serve-api.js';
import { ApplyRate } from './apply-rate.js';
import { SliceBudget } from './apply-slice-budget.js';
import { SliceCutter } from './apply-slices.js';
import type { ApplyPart, Replica } from './replica.js';

export interface FetcherOptions {
  /**
   * Partition numbers stored by one log-node (`log.fetchGroups`) that this node reads: its hosted
   * ones there, and 0 when that log-node stores the internal topics.
   */
  partitions: readonly number[];
  log: LogClient;
  replica: () => Replica;
  logReadBytesMax: number;
  /** The first read's `max_bytes` a partition, doubling at each read up to logReadBytesMax. */
  logReadBytesMin: number;
  logWaitMs: number;
  /** How long one apply transaction should take (apply-slice-budget.ts). */
  applySliceMsMax: number;
  /** Offsets of one apply transaction at most (apply-slices.ts). */
  applySliceRecordsMax: number;
  /** About this many bytes of records in one apply transaction at most (apply-slices.ts). */
  applySliceBytesMax: number;
  /** What an apply transaction takes even past its time bound (apply-slice-budget.ts). */
  applySliceRecordsMin: number;
  applySliceBytesMin: number;
  /** Caught up with no read waiting, the fetcher waits this long before reading again. */
  applyLingerMs: number;
  /** ...but only once no read has waited on its partitions for this long. */
  applyLingerIdleMs: number;
  retryMsMax: number;
  logger: Logger;
  /** Whether a read waits for offsets of these partitions that are not applied yet. */
  readsWaiting(partitions: readonly number[]): boolean;
  /** After each commit, with the topic-partitions it moved: wakes waiting reads. */
  onApplied(moved: readonly TopicPartition[]): void;
  /** The checkpoint is older than the log start. */
  onOutOfRange(topic: string, partition: number, detail: string): void;
  rebuilding: boolean;
  /** While applying is paused (a snapshot copies the stores), settles when it may go on. */
  applyPaused(): Promise<unknown> | null;
}

const RETRY_MS_MIN = 50;

/** A slice as applied: its offsets, its record bytes and how long its transactions took. */
export interface AppliedSlice {
  records: number;
  bytes: number;
  ms: number;
}

/** One topic-partition as its fetcher tails it. */
export class TailedPartition {
  state: PartitionState;
  logEndOffset = 0;
  /** Set by the first successful read: until then the lag is unknown. */
  reachedLog = false;
  error: string | undefined;
  readonly rate = new ApplyRate();
  /** The next offset to read; null: ask the stores (at the start and after an error). */
  next: number | null = null;
  retryMs = RETRY_MS_MIN;
  retryAtMs = 0;
  /** Its checkpoint is before the log start: the node rebuilds, this fetcher leaves it alone. */
  halted = false;

  constructor(
    readonly topic: string,
    readonly partition: number,
    rebuilding: boolean,
  ) {
    this.state = rebuilding ? 'rebuilding' : 'replaying';
  }
}

export class LogFetcher {
  readonly partitions: TailedPartition[] = [];
  private readonly numbers: ReadonlySet<number>;
  /** topic → partition → its state. */
  private readonly byTopic = new Map<string, Map<number, TailedPartition>>();
  private readonly abort = new AbortController();
  /** Aborted (and replaced) when a topic joins: the read in flight no longer asks for all. */
  private interrupt = new AbortController();
  private readonly done: Promise<void>;
  private readonly lingering: Wakeable = { wake: null };
  /** When a read last waited on one of this fetcher's partitions. */
  private lastWaitMs = -Infinity;
  private readonly budget: SliceBudget;
  /** The next log read's `max_bytes` a partition: small at first, doubling to the bound. */
  private readBytes: number;
  /** The last slice applied, for status. */
  lastSlice: AppliedSlice | null = null;

  constructor(private readonly options: FetcherOptions) {
    this.numbers = new Set(options.partitions);
    this.readBytes = Math.min(options.logReadBytesMin, options.logReadBytesMax);
    this.budget = new SliceBudget({
      sliceMsMax: options.applySliceMsMax,
      bytesMin: options.applySliceBytesMin,
      bytesMax: options.applySliceBytesMax,
      recordsMin: options.applySliceRecordsMin,
      recordsMax: options.applySliceRecordsMax,
    });
    this.done = this.run();
  }

  /** Whether this fetcher reads partition number `partition` (of some topic). */
  hosts(partition: number): boolean {
    return this.numbers.has(partition);
  }

  /**
   * Starts tailing `partitions` of `topic` (those of this fetcher's log-node); a read in flight is
   * abandoned so the next one carries them.
   */
  tail(topic: string, partitions: readonly number[]): void {
    let ofTopic = this.byTopic.get(topic);
    if (ofTopic === undefined) this.byTopic.set(topic, (ofTopic = new Map()));
    let added = false;
    for (const partition of partitions) {
      if (!this.numbers.has(partition) || ofTopic.has(partition)) continue;
      const tailed = new TailedPartition(topic, partition, this.options.rebuilding);
      ofTopic.set(partition, tailed);
      this.partitions.push(tailed);
      added = true;
    }
    if (!added) return;
    this.interrupt.abort();
    this.interrupt = new AbortController();
    this.lingering.wake?.();
  }

  /**
   * Stops tailing `topic` (a collection being dropped): from the return on, none of its records
   * is applied, and a read in flight that asks for it is abandoned.
   */
  untail(topic: string): void {
    const ofTopic = this.byTopic.get(topic);
    if (ofTopic === undefined) return;
    this.byTopic.delete(topic);
    for (const tailed of ofTopic.values()) {
      tailed.state = 'stopped';
      this.partitions.splice(this.partitions.indexOf(tailed), 1);
    }
    this.interrupt.abort();
    this.interrupt = new AbortController();
  }

  /**
   * The partitions of `topic` held back for what is settled now (the kind of topic it is,
   * view-fence.ts) are read again at once: a read in flight without them is abandoned.
   */
  release(topic: string): void {
    const ofTopic = this.byTopic.get(topic);
    if (ofTopic === undefined) return;
    for (const tailed of ofTopic.values()) tailed.retryAtMs = 0;
    this.interrupt.abort();
    this.interrupt = new AbortController();
    this.lingering.wake?.();
  }

  /** A read waits for one of this fetcher's partitions: it reads the log now, not after a pause. */
  hurry(): void {
    this.lastWaitMs = Date.now();
    this.lingering.wake?.();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.done;
    for (const tailed of this.partitions) tailed.state = 'stopped';
  }

  private tailed(topic: string, partition: number): TailedPartition | undefined {
    return this.byTopic.get(topic)?.get(partition);
  }

  private async run(): Promise<void> {
    const signal = this.abort.signal;
    let prefetch: { key: string; answer: Promise<FetchOutcome[]> } | null = null;
    while (!signal.aborted) {
      const round = this.interrupt.signal;
      try {
        const due = await this.duePartitions();
        if (due.length === 0) {
          await sleep(this.msUntilRetry(), signal, this.lingering);
          continue;
        }
        const positions = due.map((tailed) => ({
          topic: tailed.topic,
          partition: tailed.partition,
          offset: tailed.next as number,
        }));
        const key = positionsKey(positions);
        const answer = await (prefetch?.key === key ? prefetch.answer : this.fetch(positions));
        prefetch = null;
        if (signal.aborted) break;
        const parts = this.take(answer);
        if (parts.length > 0) {
          const after = positions.map((position) => {
            const part = parts.find(
              (p) => p.partition === position.partition && p.topic === position.topic,
            );
            return part === undefined ? position : { ...position, offset: offsetAfter(part) };
          });
          const behind = after.some(
            (p) => p.offset < (this.tailed(p.topic, p.partition)?.logEndOffset ?? 0),
          );
          if (behind && !round.aborted) {
            prefetch = { key: positionsKey(after), answer: this.fetch(after) };
            prefetch.answer.catch(() => undefined);
          }
          const answersReads = this.options.readsWaiting(this.options.partitions);
          await this.applySliced(parts, signal);
          if (signal.aborted) break;
          // A read is waiting until its wait ends, not from when it began: the idle time that
          // lets the next apply linger starts once this apply has answered it.
          if (answersReads) this.lastWaitMs = Date.now();
        }
        for (const tailed of due) this.settle(tailed);
        // No pause when a topic joined during the round: its first read goes at once.
        if (parts.length > 0 && prefetch === null && !round.aborted) {
          await this.linger(signal);
        }
      } catch (error) {
        prefetch = null;
        if (signal.aborted) break;
        // A topic joined while the read was out: read again at once, with it.
        if (round.aborted) continue;
        this.options.logger.warn(
          { partitions: this.options.partitions, err: error },
          'tailing failed; retrying',
        );
        for (const tailed of this.partitions) {
          if (!tailed.halted) this.backOff(tailed, (error as Error).message);
        }
      }
    }
  }

  /**
   * Applies a read answer slice by slice (apply-slices.ts), each as large as the time bound allows
   * (apply-slice-budget.ts), the event loop running between slices (a turn of its own, in which
   * the timers that are due fire, waiting reads' 504s among them, and reads queued meanwhile are
   * answered). A topic-partition held back in a slice skips its later ones: the next read starts
   * there. A part is applied only while the partition it was read for is tailed: a topic
   * untailed (a drop) and tailed again meanwhile is a new incarnation, which the rest of this
   * answer (the old one's records) must not reach.
   */
  private async applySliced(parts: readonly ApplyPart[], signal: AbortSignal): Promise<void> {
    const held = new Set<TailedPartition>();
    const owners = new Map(
      parts.map(({ topic, partition }) => [`${topic}/${partition}`, this.tailed(topic, partition)]),
    );
    const cutter = new SliceCutter(parts);
    for (let first = true; ; first = false) {
      if (!first) await nextTurn();
      // applyMany is synchronous: nothing can pause applying between this wait and the apply.
      for (let paused = this.options.applyPaused(); paused; paused = this.options.applyPaused()) {
        await paused;
      }
      if (signal.aborted) return;
      const slice = cutter.next(this.budget.bounds());
      if (slice === null) return;
      // A topic untailed meanwhile (a drop) is applied no more, even once tailed again.
      const live = slice.parts.filter((part) => {
        const tailed = this.tailed(part.topic, part.partition);
        const owner = owners.get(`${part.topic}/${part.partition}`);
        return tailed !== undefined && tailed === owner && !held.has(tailed);
      });
      if (live.length === 0) continue;
      const startedMs = performance.now();
      const results = this.options.replica().applyMany(live);
      const ms = performance.now() - startedMs;
      // A slice applied in part (a topic dropped meanwhile) says nothing of what a whole one costs.
      if (live.length === slice.parts.length) {
        this.budget.applied(slice.records, slice.bytes, ms);
        this.lastSlice = { records: slice.records, bytes: Math.round(slice.bytes), ms };
      }
      live.forEach((part, j) => {
        const tailed = this.tailed(part.topic, part.partition)!;
        const { nextOffset, records } = results[j];
        tailed.next = nextOffset;
        tailed.rate.record(records);
        // Held back (a settings record waits for LMDB to catch up elsewhere, replica.ts):
        // read it again after a pause, not in a tight loop.
        if (nextOffset <= part.fromOffset) tailed.retryAtMs = Date.now() + RETRY_MS_MIN;
        if (part.untilOffset !== undefined && nextOffset < part.untilOffset) held.add(tailed);
      });
      // The topic-partitions alone: this goes to the read threads, and a piece's batches are a
      // view of the whole read answer, which a post would copy to each of them.
      this.options.onApplied(live.map(({ topic, partition }) => ({ topic, partition })));
    }
  }

  /** The topic-partitions to read now, each with its next offset known. */
  private async duePartitions(): Promise<TailedPartition[]> {
    const now = Date.now();
    const due = this.partitions.filter((tailed) => !tailed.halted && tailed.retryAtMs <= now);
    const unknown = due.filter((tailed) => tailed.next === null);
    let logStarts: Map<string, number> | null = null;
    for (const tailed of unknown) {
      tailed.next = this.options.replica().readFrom(tailed.topic, tailed.partition);
      if (tailed.next === null) {
        logStarts ??= new Map(
          (await this.options.log.offsets()).map((o) => [
            `${o.topic}/${o.partition}`,
            o.logStartOffset,
          ]),
        );
        tailed.next = logStarts.get(`${tailed.topic}/${tailed.partition}`) ?? 0;
      }
    }
    return due;
  }

  private msUntilRetry(): number {
    const waiting = this.partitions.filter((tailed) => !tailed.halted);
    // Nothing to tail (yet): wait for a topic to join, which wakes this sleep.
    if (waiting.length === 0) return this.options.retryMsMax;
    return Math.max(Math.min(...waiting.map((tailed) => tailed.retryAtMs)) - Date.now(), 1);
  }

  /**
   * Caught up (the answer reached the log end), with no read waiting and none for
   * `applyLingerIdleMs`, the next log read waits `applyLingerMs`, so what arrives meanwhile is
   * applied as one group: a transaction costs far more than a record (README.md has the figures).
   * While reads wait on these partitions now and then (read-your-writes traffic) every write is
   * applied at once, as Elasticsearch refreshes only shards that are searched; a read that starts
   * waiting also ends a pause.
   */
  private async linger(signal: AbortSignal): Promise<void> {
    const { applyLingerMs, applyLingerIdleMs, readsWaiting, partitions } = this.options;
    if (applyLingerMs <= 0 || readsWaiting(partitions)) return;
    if (Date.now() - this.lastWaitMs < applyLingerIdleMs) return;
    await sleep(applyLingerMs, signal, this.lingering);
  }

  /**
   * The first read of a topic-partition does not long-poll, so its lag (and readiness) is known at
   * once. A topic joining aborts the read. Reads start small and double (logReadBytesMin), so the
   * first answer of a replay is applied while the next, larger one is read.
   */
  private fetch(positions: FetchPosition[]): Promise<FetchOutcome[]> {
    const maxBytes = this.readBytes;
    this.readBytes = Math.min(maxBytes * 2, this.options.logReadBytesMax);
    const caughtUp = positions.every((p) => this.tailed(p.topic, p.partition)?.reachedLog ?? true);
    return this.options.log.fetch(positions, {
      maxBytes,
      waitMs: caughtUp ? this.options.logWaitMs : 0,
      signal: AbortSignal.any([this.abort.signal, this.interrupt.signal]),
    });
  }

  /** Records each partition's outcome; answers what is to apply. */
  private take(answer: readonly FetchOutcome[]): ApplyPart[] {
    const parts: ApplyPart[] = [];
    for (const outcome of answer) {
      const tailed = this.tailed(outcome.topic, outcome.partition);
      if (tailed === undefined) continue;
      if ('error' in outcome) {
        this.fail(tailed, outcome.error);
        continue;
      }
      tailed.logEndOffset = outcome.endOffset;
      tailed.reachedLog = true;
      if (outcome.batches.length > 0) {
        parts.push({
          topic: tailed.topic,
          partition: tailed.partition,
          fromOffset: tailed.next as number,
          batches: outcome.batches,
        });
      }
    }
    return parts;
  }

  private fail(tailed: TailedPartition, error: TailbaseError): void {
    const logStart = error.details.logStartOffset;
    if (
      error.code === 'offset_out_of_range' &&
      tailed.next !== null &&
      typeof logStart === 'number' &&
      tailed.next < logStart
    ) {
      tailed.halted = true;
      this.options.onOutOfRange(
        tailed.topic,
        tailed.partition,
        `checkpoint ${tailed.next} is before the log start ${logStart}`,
      );
      return;
    }
    this.options.logger.warn(
      { topic: tailed.topic, partition: tailed.partition, err: error },
      'partition read failed',
    );
    this.backOff(tailed, error.message);
  }

  /** The partition is read again after its back-off (bounded exponential), from its checkpoint. */
  private backOff(tailed: TailedPartition, error: string): void {
    tailed.error = error;
    tailed.next = null;
    tailed.retryAtMs = Date.now() + tailed.retryMs;
    tailed.retryMs = Math.min(tailed.retryMs * 2, this.options.retryMsMax);
  }

  /** After a round: a partition read without error is healthy; its state follows its lag. */
  private settle(tailed: TailedPartition): void {
    if (tailed.next === null || tailed.halted) return;
    tailed.error = undefined;
    tailed.retryMs = RETRY_MS_MIN;
    if (tailed.next >= tailed.logEndOffset) tailed.state = 'tailing';
    else if (tailed.state === 'tailing') tailed.state = 'replaying';
  }
}

function positionsKey(positions: readonly FetchPosition[]): string {
  return positions.map((p) => `${p.topic}/${p.partition}:${p.offset}`).join(',');
}

/** The offset after the last whole batch of a read answer, from the headers alone. */
function offsetAfter(part: ApplyPart): number {
  let next = part.fromOffset;
  for (let at = 0; ;) {
    const header = readBatchHeader(part.batches, at);
    if (header === null || at + header.sizeBytes > part.batches.length) return next;
    next = header.baseOffset + header.lastOffsetDelta + 1;
    at += header.sizeBytes;
  }
}

/** Holds the function that ends a sleep early while one is in progress. */
interface Wakeable {
  wake: (() => void) | null;
}

function sleep(ms: number, signal: AbortSignal, wakeable?: Wakeable): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      if (wakeable) wakeable.wake = null;
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
    if (wakeable) wakeable.wake = done;
  });
}
