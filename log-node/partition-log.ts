/**
 * One partition of a topic: the facade that owns its segments, hands out offsets, commits appends
 * in groups (all batches that arrive during one fsync share the next), serves reads up to the
 * durable end, and wakes long-polls.
 */
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { assert } from '../shared/assert.js';
import { enforceBatchLimits, stampBatch } from '../shared/batch-codec.js';
import { TailbaseError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import type { TopicConfigs } from '../shared/topics.js';
import type { Clock } from './clock.js';
import type { LogNodeConfig } from './config.js';
import { type LoadedPartition, loadPartition } from './log-loader.js';
import {
  checkpointFits,
  readCleanerCheckpoint,
  removeCleanerCheckpoint,
  writeCleanerCheckpoint,
} from './cleaner-checkpoint.js';
import { lastSequenceOf, type ProducerAppend, ProducerState } from './producer-state.js';
import type { ReadBuffers } from './read-buffers.js';
import { RecoveryPoint } from './recovery-point.js';
import { Segment, type SegmentOptions } from './segment.js';
import { PRODUCERS_SUFFIX, listBaseOffsets, segmentPath } from './segment-files.js';
import { fsyncDir, writeFileAtomic } from '../shared/durable-files.js';
import { isErrno, unlinkIfExists } from '../shared/file-io.js';
import { TailCache } from './tail-cache.js';
import { Waiters } from './waiters.js';

export interface AppendAck {
  baseOffset: number;
  lastOffset: number;
  duplicate: boolean;
}

/** The topic a partition belongs to; its configs change when the topic's do. */
export interface PartitionTopic {
  readonly name: string;
  readonly configs: TopicConfigs;
  /** Which topic of this name (a name dropped and created again is the next). */
  readonly incarnation: number;
}

interface PendingAppend {
  bytes: Buffer;
  producer: ProducerAppend;
  lastOffsetDelta: number;
  maxTimestampMs: number;
  resolve: (ack: AppendAck) => void;
  reject: (error: unknown) => void;
}

/** A stamped batch as the active segment appends it. */
type SegmentWrite = Parameters<Segment['append']>[0][number];

export interface PartitionReadResult {
  batches: Buffer;
  logStartOffset: number;
  endOffset: number;
}

/** How many producer snapshots a partition keeps (the newest is used; one spare). */
const PRODUCER_SNAPSHOTS_KEPT = 2;

/**
 * What a stopped partition answers. The cause (an errno, a file and byte position) is in the
 * log-node's log and its /internal/status, never in an answer that may travel on to a client.
 */
export function partitionFailed(topic: string, partition: number): TailbaseError {
  return new TailbaseError(
    503,
    'partition_failed',
    `partition ${partition} of topic ${topic} stopped after a storage error; the log-node's log has the cause`,
    { topic, partition },
  );
}

/**
 * What an append answers when the disk is full: nothing of its round was acknowledged or kept,
 * and the partition takes writes again once there is room.
 */
export function diskFull(topic: string, partition: number): TailbaseError {
  return new TailbaseError(
    507,
    'disk_full',
    `partition ${partition} of topic ${topic} could not be written: the disk is full; nothing of this append was kept, retry once there is room`,
    { topic, partition },
  );
}

export class PartitionLog {
  readonly topic: PartitionTopic;
  readonly partition: number;
  readonly dir: string;
  private readonly config: LogNodeConfig;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private segments: Segment[];
  private producers: ProducerState;
  private queue: PendingAppend[] = [];
  private queuedBytes = 0;
  private flushing: Promise<void> | null = null;
  private failure: Error | null = null;
  private closed = false;
  /** Offsets below this are durable and may be read. */
  private visibleEndOffset: number;
  /** Bytes of the active segment that readers may see. */
  private visibleActiveBytes: number;
  private intervalTimer: NodeJS.Timeout | null = null;
  readonly waiters = new Waiters();
  private readonly tail: TailCache;
  /** How this partition's appendable segments are opened: the same at load and at each roll. */
  private readonly segmentOptions: SegmentOptions;
  readonly truncatedBytesOnLoad: number;
  private readonly recoveryPoint: RecoveryPoint;
  /**
   * The cleaner's point as stored, once it fitted the loaded log (cleaner-checkpoint.ts); null:
   * all dirty. Its incarnation is the topic's then, so only the offset is kept.
   */
  private storedCleanedThroughOffset: number | null = null;

  private constructor(
    topic: PartitionTopic,
    partition: number,
    dir: string,
    config: LogNodeConfig,
    clock: Clock,
    logger: Logger,
    private readonly readBuffers: ReadBuffers,
  ) {
    this.topic = topic;
    this.partition = partition;
    this.dir = dir;
    this.config = config;
    this.clock = clock;
    this.logger = logger.child({ topic: topic.name, partition });
    this.segmentOptions = {
      io: config.fileIO,
      indexIntervalBytes: config.indexIntervalBytes,
      writeThrough: config.fsync === 'always',
    };
    const loaded = this.load();
    this.segments = loaded.segments;
    this.producers = loaded.producers;
    this.truncatedBytesOnLoad = loaded.truncatedBytes;
    const { io } = this.segmentOptions;
    this.loadCleanerCheckpoint();
    this.recoveryPoint = RecoveryPoint.open(io, dir, loaded.recoveryPoint, {
      writeThrough: this.segmentOptions.writeThrough,
      intervalMs: config.recoveryPointIntervalMs,
      onError: (error) => this.recoveryPointFailed(error),
    });
    if (loaded.recoveryPoint.kind === 'missing') fsyncDir(dir, io);
    // What recovery kept is checked and durable: damage to it from now on is damage, not a tear.
    this.recoveryPoint.writeNow(this.active.baseOffset, this.active.state.sizeBytes);
    this.visibleEndOffset = this.active.state.nextOffset;
    this.visibleActiveBytes = this.active.state.sizeBytes;
    this.tail = new TailCache(config.tailCacheBytesMax);
    if (config.fsync === 'interval') {
      this.intervalTimer = setInterval(() => void this.syncInterval(), config.fsyncIntervalMs);
      this.intervalTimer.unref();
    }
  }

  /** The partition as its directory holds it: recovery at open, and after a full disk. */
  private load(): LoadedPartition {
    return loadPartition(this.dir, {
      ...this.segmentOptions,
      producerRecentBatchesMax: this.config.producerRecentBatchesMax,
      producerExpiryMs: this.config.producerExpiryMs,
      nowMs: this.clock.nowMs(),
      logger: this.logger,
    });
  }

  /** The cleaner's point as stored, kept only if it fits the segments just loaded. */
  private loadCleanerCheckpoint(): void {
    const { io } = this.segmentOptions;
    const stored = readCleanerCheckpoint(io, this.dir);
    const fits =
      stored !== null &&
      checkpointFits(stored, {
        incarnation: this.topic.incarnation,
        closedEndOffset: this.active.baseOffset,
      });
    if (stored !== null && !fits) {
      this.logger.warn({ stored }, "the cleaner's point does not fit this log: all of it is dirty");
      removeCleanerCheckpoint(io, this.dir);
    }
    this.storedCleanedThroughOffset = fits ? stored.cleanedThroughOffset : null;
  }

  /** Opens a partition; a corrupt log yields a failed partition that refuses reads and appends. */
  static open(
    topic: PartitionTopic,
    partition: number,
    dir: string,
    config: LogNodeConfig,
    clock: Clock,
    logger: Logger,
    readBuffers: ReadBuffers,
  ): PartitionLog {
    return new PartitionLog(topic, partition, dir, config, clock, logger, readBuffers);
  }

  private get active(): Segment {
    return this.segments[this.segments.length - 1];
  }

  get logStartOffset(): number {
    return this.segments[0].baseOffset;
  }

  get endOffset(): number {
    return this.visibleEndOffset;
  }

  get sizeBytes(): number {
    return this.segments.reduce((sum, s) => sum + s.state.sizeBytes, 0);
  }

  get segmentCount(): number {
    return this.segments.length;
  }

  get producerCount(): number {
    return this.producers.size;
  }

  get failed(): Error | null {
    return this.failure;
  }

  /** True once close() began: its segments are (or are about to be) retired. */
  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * Queues a producer's batch; resolves once it is durable (or, for a retry, with its offsets).
   * The batch is bounded by the node's limits and by its topic's maxMessageBytes.
   */
  append(batch: Buffer): Promise<AppendAck> {
    this.ensureWritable();
    const header = enforceBatchLimits(batch, this.config);
    const { maxMessageBytes } = this.topic.configs;
    if (batch.length > maxMessageBytes) {
      throw new TailbaseError(
        413,
        'batch_too_large',
        `batch exceeds topic ${this.topic.name}'s maxMessageBytes`,
        {
          topic: this.topic.name,
          limit: 'maxMessageBytes',
          max: maxMessageBytes,
          actual: batch.length,
        },
      );
    }
    if (this.queuedBytes + batch.length > this.config.appendQueueBytesMax) {
      throw new TailbaseError(
        503,
        'append_queue_full',
        'too many bytes are waiting to be written',
        {
          topic: this.topic.name,
          partition: this.partition,
          limit: 'appendQueueBytesMax',
          max: this.config.appendQueueBytesMax,
        },
      );
    }
    // The bytes are stored as they came; copy them out of the request's buffer before stamping.
    const bytes = Buffer.from(batch);
    return new Promise<AppendAck>((resolve, reject) => {
      this.queue.push({
        bytes,
        producer: {
          producerId: header.producerId,
          producerEpoch: header.producerEpoch,
          firstSequence: header.baseSequence,
          lastSequence: lastSequenceOf(header.baseSequence, header.lastOffsetDelta),
        },
        lastOffsetDelta: header.lastOffsetDelta,
        maxTimestampMs: header.maxTimestampMs,
        resolve,
        reject,
      });
      this.queuedBytes += bytes.length;
      if (this.flushing === null) this.flushing = this.flushLoop();
    });
  }

  private ensureWritable(): void {
    if (this.failure) throw partitionFailed(this.topic.name, this.partition);
    if (this.closed) throw new TailbaseError(503, 'shutting_down', 'the log-node is shutting down');
  }

  private async flushLoop(): Promise<void> {
    try {
      while (this.queue.length > 0 && this.failure === null) {
        // Every round takes at least one append off the queue, so the loop ends; after a failed
        // round it also waits a turn of the event loop, so no failure, whatever its path, can
        // keep timers and I/O from running.
        if (!(await this.commitRound())) await yieldToLoop();
      }
    } catch (error) {
      // commitRound settles its own failures; should anything escape it, this partition stops
      // (and says why) rather than leave its appends unanswered or take the node down with an
      // unhandled rejection.
      this.fail(error as Error);
    } finally {
      this.flushing = null;
    }
  }

  /**
   * One group commit: roll if due, assign offsets, write, fsync, then acknowledge. Any error on
   * the way (the roll's files included) stops the partition and fails every append of the round;
   * an error before the round took any fails the append at the head of the queue, so each round
   * ends at least one. Returns whether the round succeeded.
   */
  private async commitRound(): Promise<boolean> {
    const taken: PendingAppend[] = [];
    try {
      const { writes, acks } = this.takeRound(taken);
      if (writes.length > 0) {
        await this.active.append(writes);
        // fsync=always: the active segment is write-through (O_DSYNC), so written is durable.
        assert(
          this.config.fsync !== 'always' || this.active.writeThrough,
          'with fsync=always the active segment is write-through',
        );
        this.visibleEndOffset = this.active.state.nextOffset;
        this.visibleActiveBytes = this.active.state.sizeBytes;
        this.tail.add(writes);
        if (this.config.fsync === 'always') {
          this.recoveryPoint.advance(this.active.baseOffset, this.visibleActiveBytes);
        }
      }
      for (const { entry, ack } of acks) entry.resolve(ack);
      if (writes.length > 0) this.waiters.wakeAll();
      return true;
    } catch (error) {
      if (taken.length === 0 && this.queue.length > 0) taken.push(this.dequeue());
      if (isErrno(error, 'ENOSPC') && this.reloadAfterFullDisk(error as Error)) {
        const refused = [...taken, ...this.queue.splice(0)];
        this.queuedBytes = 0;
        for (const entry of refused) entry.reject(diskFull(this.topic.name, this.partition));
        return false;
      }
      // After a failed write or fsync the page cache may not match the disk (PostgreSQL's
      // fsyncgate), and after a failed roll the segment set may not match the directory: stop
      // the partition; a restart recovers from what is really on disk.
      this.fail(error as Error);
      for (const entry of taken) entry.reject(partitionFailed(this.topic.name, this.partition));
      return false;
    }
  }

  /**
   * A full disk refuses a write before it reaches the disk, so unlike a failed fsync it leaves no
   * doubt about what is there: the round's bytes are cut off the active segment (a shrink needs no
   * room), and the partition is reloaded from its directory as a restart would (producer state,
   * the segment set after a roll cut short). Returns false, and the partition stops, when that
   * fails too.
   */
  private reloadAfterFullDisk(cause: Error): boolean {
    try {
      this.active.truncate(this.visibleActiveBytes);
      const loaded = this.load();
      const active = loaded.segments[loaded.segments.length - 1];
      assert(
        active.state.nextOffset === this.visibleEndOffset,
        'a partition reloaded after a full disk ends where its acknowledged appends did',
      );
      const old = this.segments;
      this.segments = loaded.segments;
      this.producers = loaded.producers;
      this.visibleActiveBytes = active.state.sizeBytes;
      for (const segment of old) segment.retire();
      this.loadCleanerCheckpoint();
      this.logger.warn({ err: cause }, 'disk full: the round was refused and nothing of it kept');
      return true;
    } catch (error) {
      this.logger.error({ err: error, cause }, 'could not recover from a full disk');
      return false;
    }
  }

  /**
   * Takes the next round from the queue and assigns its offsets; every entry taken is pushed to
   * `taken`, so a failure can answer it. A refused batch is answered at once, a retry of one in
   * the log with its offsets. Only a batch to be written decides a roll: one that writes nothing
   * must change nothing on disk, and a roll for it would leave the active segment empty, the
   * log's last batch in a closed segment the cleaner may empty, and a reader at its offsets with
   * nothing to read until the next write (Kafka's cleaner keeps a log's last batch for that
   * reason, KAFKA-17076).
   */
  private takeRound(taken: PendingAppend[]): {
    writes: SegmentWrite[];
    acks: { entry: PendingAppend; ack: AppendAck }[];
  } {
    const writes: SegmentWrite[] = [];
    const acks: { entry: PendingAppend; ack: AppendAck }[] = [];
    let writeBytes = 0;
    // A roll keeps the next offset: the new segment's base is the closed one's end.
    let nextOffset = this.active.state.nextOffset;
    const nowMs = this.clock.nowMs();
    while (this.queue.length > 0) {
      const entry = this.queue[0];
      let check;
      try {
        check = this.producers.check(entry.producer);
      } catch (error) {
        this.dequeue();
        entry.reject(error);
        continue;
      }
      if (check.kind === 'duplicate') {
        taken.push(this.dequeue());
        const { baseOffset, lastOffset } = check.batch;
        acks.push({ entry, ack: { baseOffset, lastOffset, duplicate: true } });
        continue;
      }
      if (
        writes.length > 0 &&
        this.active.state.sizeBytes + writeBytes + entry.bytes.length > this.config.segmentBytesMax
      ) {
        break;
      }
      // Taken before the roll, so a roll that fails fails this append with it.
      taken.push(this.dequeue());
      if (writes.length === 0 && this.rollDue(entry.bytes.length, nowMs)) this.roll();
      const baseOffset = nextOffset;
      const lastOffset = baseOffset + entry.lastOffsetDelta;
      stampBatch(entry.bytes, baseOffset, 0);
      writes.push({
        bytes: entry.bytes,
        baseOffset,
        lastOffset,
        maxTimestampMs: entry.maxTimestampMs,
      });
      writeBytes += entry.bytes.length;
      this.producers.record(entry.producer, { baseOffset, lastOffset }, nowMs);
      acks.push({ entry, ack: { baseOffset, lastOffset, duplicate: false } });
      nextOffset = lastOffset + 1;
    }
    return { writes, acks };
  }

  private dequeue(): PendingAppend {
    const entry = this.queue.shift()!;
    this.queuedBytes -= entry.bytes.length;
    return entry;
  }

  /** Whether the active segment closes before a batch of `bytes` is written to it. */
  private rollDue(bytes: number, nowMs: number): boolean {
    const { sizeBytes, createdAtMs } = this.active.state;
    return (
      sizeBytes > 0 &&
      (sizeBytes + bytes > this.config.segmentBytesMax ||
        nowMs - createdAtMs >= this.config.segmentMsMax)
    );
  }

  private async syncInterval(): Promise<void> {
    if (this.failure || this.closed) return;
    const { baseOffset } = this.active;
    const syncedBytes = this.active.state.sizeBytes;
    try {
      await this.active.sync();
      if (this.active.baseOffset === baseOffset)
        this.recoveryPoint.advance(baseOffset, syncedBytes);
    } catch (error) {
      this.fail(error as Error);
    }
  }

  /**
   * A full disk leaves the previous point, which is lower and so still safe (recovery-point.ts):
   * the partition goes on. Any other failure is a failing disk, and stops it as a data write's
   * would.
   */
  private recoveryPointFailed(error: Error): void {
    if (isErrno(error, 'ENOSPC')) {
      this.logger.warn({ err: error }, 'disk full: the recovery point stays where it was');
      return;
    }
    this.fail(error);
  }

  private fail(error: Error): void {
    if (this.failure) return;
    this.failure = error;
    this.logger.error({ err: error }, 'partition stopped after an I/O error');
    const pending = this.queue.splice(0);
    this.queuedBytes = 0;
    for (const entry of pending) entry.reject(partitionFailed(this.topic.name, this.partition));
    this.waiters.wakeAll();
  }

  /** Closes the active segment (fsynced, index written, producer state snapshotted) and opens the next. */
  private roll(): void {
    const closing = this.active;
    closing.syncNow();
    closing.writeIndex();
    const nextBase = closing.state.nextOffset;
    const { io } = this.segmentOptions;
    writeFileAtomic(segmentPath(this.dir, nextBase, PRODUCERS_SUFFIX), this.producers.encode(), io);
    const next = Segment.create(this.dir, nextBase, this.clock.nowMs(), this.segmentOptions);
    fsyncDir(this.dir, io);
    this.segments = [...this.segments, next];
    this.visibleActiveBytes = 0;
    this.producers.expire(this.clock.nowMs());
    for (const base of listBaseOffsets(io, this.dir, PRODUCERS_SUFFIX).slice(
      0,
      -PRODUCER_SNAPSHOTS_KEPT,
    )) {
      unlinkIfExists(io, segmentPath(this.dir, base, PRODUCERS_SUFFIX));
    }
    this.logger.info({ baseOffset: nextBase }, 'rolled a new segment');
  }

  /**
   * Whole batches holding offsets >= `offset`, up to maxBytes (at least one batch). Waits up to
   * waitMs when nothing at or after the offset is durable yet.
   */
  async read(
    offset: number,
    maxBytes: number,
    waitMs: number,
    signal?: AbortSignal,
  ): Promise<PartitionReadResult> {
    // A partition stopped by a failed write still serves what it acknowledged: every byte below
    // the visible end was durable before the failure.
    if (
      !Number.isSafeInteger(offset) ||
      offset < this.logStartOffset ||
      offset > this.visibleEndOffset
    ) {
      throw new TailbaseError(
        400,
        'offset_out_of_range',
        `offset ${offset} is outside the log of partition ${this.partition} of topic ${this.topic.name}`,
        {
          topic: this.topic.name,
          partition: this.partition,
          offset,
          logStartOffset: this.logStartOffset,
          endOffset: this.visibleEndOffset,
        },
      );
    }
    let batches = await this.readNow(offset, maxBytes);
    if (batches.length === 0 && waitMs > 0 && !this.closed) {
      await this.waiters.wait(waitMs, signal);
      batches = await this.readNow(offset, maxBytes);
    }
    return { batches, logStartOffset: this.logStartOffset, endOffset: this.visibleEndOffset };
  }

  private async readNow(offset: number, maxBytes: number): Promise<Buffer> {
    // close() retires the segments; a long-poll it woke finds nothing more to read. At the end of
    // the log (where every caught-up tailer asks) there is nothing to look up, and the answer is
    // given without an await, so no append can become visible between it and a long-poll's wait.
    if (this.closed || offset >= this.visibleEndOffset) return Buffer.alloc(0);
    const cached = this.tail.read(offset, maxBytes);
    if (cached !== null) return cached;
    for (;;) {
      const segments = this.segments;
      let i = findSegment(segments, offset);
      for (; i < segments.length; i++) {
        const segment = segments[i];
        // A segment read is asynchronous: while the one before was read, this one may have been
        // retired and closed (compaction, retention, close()). The segments are looked up again.
        if (!segment.open) break;
        const until = i === segments.length - 1 ? this.visibleActiveBytes : segment.state.sizeBytes;
        segment.acquire();
        try {
          const batches = await segment.read(offset, maxBytes, until, this.readBuffers);
          if (batches !== null) return batches;
        } finally {
          segment.release();
        }
      }
      if (i === segments.length || this.closed) return Buffer.alloc(0);
    }
  }

  /** Closed segments, oldest first: what retention and the cleaner work on. */
  closedSegments(): readonly Segment[] {
    return this.segments.slice(0, -1);
  }

  /**
   * Offsets below this are clean (cleaner-checkpoint.ts): the stored point, or the log start when
   * retention removed what it covered, or when there is none.
   */
  get cleanedThroughOffset(): number {
    return Math.max(this.storedCleanedThroughOffset ?? 0, this.logStartOffset);
  }

  /** Stores the point after a pass whose swaps below it are all durable. */
  markCleanedThrough(offset: number): void {
    assert(offset <= this.active.baseOffset, 'only closed segments are ever clean');
    writeCleanerCheckpoint(this.segmentOptions.io, this.dir, {
      cleanedThroughOffset: offset,
      incarnation: this.topic.incarnation,
    });
    this.storedCleanedThroughOffset = offset;
  }

  /** Swaps a closed segment for its compacted copy (already durable under the same name). */
  replaceSegment(old: Segment, replacement: Segment): void {
    const at = this.segments.indexOf(old);
    assert(at >= 0 && at < this.segments.length - 1, 'only a closed segment is replaced');
    const segments = [...this.segments];
    segments[at] = replacement;
    this.segments = segments;
    old.retire();
    // Readers get the compacted batches from now on, as from the file, through its end offset
    // (the segment after it begins where it ended, however much the compaction removed).
    this.tail.dropThrough(this.segments[at + 1].baseOffset - 1);
  }

  /** Deletes the oldest closed segments; the log start offset moves to the first one left. */
  deleteOldestSegments(count: number): void {
    assert(count < this.segments.length, 'the active segment is never deleted');
    const removed = this.segments.slice(0, count);
    this.segments = this.segments.slice(count);
    const { io } = this.segmentOptions;
    for (const segment of removed) {
      unlinkIfExists(io, segment.indexPath);
      unlinkIfExists(io, segment.logPath);
      segment.retire();
    }
    fsyncDir(this.dir, io);
  }

  async close(): Promise<void> {
    this.closed = true;
    while (this.flushing) await this.flushing;
    if (this.intervalTimer) clearInterval(this.intervalTimer);
    if (!this.failure) {
      this.active.syncNow();
      this.visibleEndOffset = this.active.state.nextOffset;
    }
    await this.recoveryPoint.flush();
    if (!this.failure)
      this.recoveryPoint.writeNow(this.active.baseOffset, this.active.state.sizeBytes);
    this.recoveryPoint.close();
    this.waiters.wakeAll();
    for (const segment of this.segments) segment.retire();
  }
}

/** The index of the last segment whose base offset is at or below `offset`. */
function findSegment(segments: readonly Segment[], offset: number): number {
  let low = 0;
  let high = segments.length - 1;
  let found = 0;
  while (low <= high) {
    const mid = (low + high) >>> 1;
    if (segments[mid].baseOffset <= offset) {
      found = mid;
      low = mid + 1;
    } else {
      high = mid - 1;
    }
  }
  return found;
}
