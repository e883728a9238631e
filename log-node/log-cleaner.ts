/**
 * Background upkeep of closed segments, each topic-partition by its topic's configs: compaction
 * (keep the latest record per key within the topic-partition, drop tombstones after the topic's
 * deleteRetentionMs, never in the pass that first sees them) and retention (delete whole segments
 * past the topic's retentionMs or retentionBytes). The active segment is never touched. A compacted
 * copy replaces its segment by one atomic rename, so a crash leaves either the old segment or the
 * new one, never neither.
 *
 * Compaction is Kafka's (compact(), FORMAT.md): a partition is cleaned only once the part of its
 * closed log past its cleaned-through point (cleaner-checkpoint.ts) is cleanerMinDirtyRatio of it,
 * and its key map holds that dirty part only: a pass that mapped every batch of every compacted
 * partition each interval took 100-210 ms of CPU a second at 2.5 million documents.
 *
 * The cleaner shares the log-node's thread with every append and read, so it works in slices of
 * at most `cleanerSliceMsMax` and gives the thread back between them: at the 10^7 scale run's
 * sizes (1.2 GB a partition) a pass done in one go held every append of the node for 8-40 s. Its copy is written and fsynced through the
 * thread pool for the same reason. Between slices the partition goes on: appends and rolls add
 * batches past what the pass scans (it reads up to the ends it saw when it began), and a segment
 * the pass works on may leave the set (a full disk reloads it): its copy is then thrown away; and
 * the partition may close (its topic dropped): the pass then stops at its next slice, and skips a
 * partition closed before its turn came.
 */
import fs from 'node:fs';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import {
  batchCodec,
  compressBatch,
  decodeRecords,
  encodeBatch,
  type BatchHeader,
  type StoredRecord,
} from '../shared/batch-codec.js';
import type { Logger } from '../shared/logger.js';
import { scanBatches, scanCursor } from './batch-scanner.js';
import { dirtyShareOf } from './cleaner-checkpoint.js';
import type { Clock } from './clock.js';
import { CorruptLogError } from './log-loader.js';
import type { LogNode } from './log-node.js';
import type { PartitionLog } from './partition-log.js';
import { Segment } from './segment.js';
import { CLEANED_SUFFIX, LOG_SUFFIX, segmentPath } from './segment-files.js';
import { fsyncDir } from '../shared/durable-files.js';
import { unlinkIfExists, writevAll } from '../shared/file-io.js';

export interface CleanSummary {
  topic: string;
  partition: number;
  segmentsCompacted: number;
  recordsRemoved: number;
  bytesBefore: number;
  bytesAfter: number;
  segmentsDeleted: number;
  /** Compacted topics: offsets below this are clean (as the pass left it). */
  cleanedThroughOffset?: number;
  /** Compacted topics: the closed bytes past the point over all closed bytes, before the pass. */
  dirtyRatio?: number;
  /** Why this partition's pass stopped early (e.g. a corrupt closed segment); absent if it did not. */
  error?: string;
}

/**
 * Thrown out of a slice when the node or the partition closes (or the partition fails, or its
 * segment set is reloaded) in the middle of a pass: nothing is swapped.
 */
class PassStopped extends Error {}

/** What a compaction pass decides records by. */
interface CompactionPass {
  deleteRetentionMs: number;
  /** The point the pass began at: below it the clean part, from it the dirty part. */
  fromOffset: number;
  /** The newest offset of each key among the dirty records below untilOffset. */
  latest: Map<string, number>;
  /** Where the map ends (exclusive): the pass cleans below it, and its point moves there. */
  untilOffset: number;
  nowMs: number;
}

export class LogCleaner {
  private readonly node: LogNode;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<CleanSummary[]> | null = null;

  constructor(node: LogNode, clock: Clock, logger: Logger) {
    this.node = node;
    this.clock = clock;
    this.logger = logger.child({ component: 'cleaner' });
  }

  start(): void {
    this.timer = setInterval(
      () => void this.runOnce().catch(() => undefined),
      this.node.config.cleanerIntervalMs,
    );
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running?.catch(() => undefined);
  }

  /** One pass over every open topic-partition; concurrent callers share the pass in progress. */
  runOnce(): Promise<CleanSummary[]> {
    this.running ??= this.pass().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async pass(): Promise<CleanSummary[]> {
    const summaries: CleanSummary[] = [];
    for (const log of this.node.openPartitions()) {
      if (this.node.closing) break;
      // The list is as it was when the pass began. A dropped topic's partition keeps its segment
      // list once closed: retention would unlink by path what may be a new topic's live segment.
      if (log.isClosed || log.failed) continue;
      summaries.push(await this.cleanPartition(log));
      // Retention is synchronous: without a turn between partitions, a pass would delete the old
      // segments of every delete-policy partition while holding every append of the node.
      await yieldToLoop();
    }
    return summaries;
  }

  async cleanPartition(log: PartitionLog): Promise<CleanSummary> {
    const { cleanupPolicy } = log.topic.configs;
    const summary: CleanSummary = {
      topic: log.topic.name,
      partition: log.partition,
      segmentsCompacted: 0,
      recordsRemoved: 0,
      bytesBefore: 0,
      bytesAfter: 0,
      segmentsDeleted: 0,
    };
    try {
      if (cleanupPolicy === 'delete') summary.segmentsDeleted = this.applyRetention(log);
      if (cleanupPolicy === 'compact') await this.compact(log, summary);
    } catch (error) {
      if (error instanceof PassStopped) return summary;
      // Each segment is either as it was or fully swapped (the summary counts the swaps).
      summary.error = (error as Error).message;
      this.logger.error(
        {
          topic: log.topic.name,
          partition: log.partition,
          err: error,
          segmentsCompacted: summary.segmentsCompacted,
        },
        'cleaning failed; the pass stopped for this partition',
      );
    }
    return summary;
  }

  private applyRetention(log: PartitionLog): number {
    const { retentionMs, retentionBytes } = log.topic.configs;
    const closed = log.closedSegments();
    const nowMs = this.clock.nowMs();
    let totalBytes = log.sizeBytes;
    let count = 0;
    for (const segment of closed) {
      const expired = retentionMs >= 0 && nowMs - segment.state.maxTimestampMs > retentionMs;
      const oversize =
        retentionBytes >= 0 && totalBytes - segment.state.sizeBytes >= retentionBytes;
      if (!expired && !oversize) break;
      totalBytes -= segment.state.sizeBytes;
      count++;
    }
    if (count > 0) {
      log.deleteOldestSegments(count);
      this.logger.info(
        {
          topic: log.topic.name,
          partition: log.partition,
          segments: count,
          logStartOffset: log.logStartOffset,
        },
        'retention deleted segments',
      );
    }
    return count;
  }

  /**
   * Kafka's way: a partition is cleaned once the closed bytes past its cleaned-through point are
   * at least cleanerMinDirtyRatio of its closed bytes; the key map is built from those dirty
   * records only (the clean part has at most one record a key already), then every closed
   * segment up to where the map ends is rewritten against it, oldest first, and the point moves
   * there once all of them are durable. So a byte is read about 1/ratio times over its life, where
   * a pass that mapped the whole log read it every interval.
   */
  private async compact(log: PartitionLog, summary: CleanSummary): Promise<void> {
    const closed = log.closedSegments();
    const { cleanedThroughOffset: from, dirtyBytes, dirtyRatio } = dirtyShareOf(log);
    summary.cleanedThroughOffset = from;
    summary.dirtyRatio = dirtyRatio;
    if (dirtyBytes === 0 || dirtyRatio < this.node.config.cleanerMinDirtyRatio) return;
    const { latest, untilOffset } = await this.latestOffsets(log, closed, from);
    if (untilOffset <= from) return;
    const { deleteRetentionMs } = log.topic.configs;
    const pass: CompactionPass = {
      deleteRetentionMs,
      fromOffset: from,
      latest,
      untilOffset,
      nowMs: this.clock.nowMs(),
    };
    for (const segment of closed) {
      if (segment.baseOffset >= untilOffset) break;
      // A reloaded set holds new segments: what this pass read of the old ones decides nothing.
      if (log.isClosed || !log.closedSegments().includes(segment)) {
        throw new PassStopped('the segment set changed');
      }
      const removableAt = await this.firstRemovableAt(log, segment, pass);
      if (removableAt === null) continue;
      const rewritten = await this.rewrite(log, segment, pass, removableAt);
      // A later segment's tombstone may be dropped only once every older record of its key is.
      if (rewritten === null) throw new PassStopped('the segment left the set');
      summary.bytesBefore += segment.state.sizeBytes;
      log.replaceSegment(segment, rewritten.segment);
      summary.segmentsCompacted++;
      summary.recordsRemoved += rewritten.recordsRemoved;
      summary.bytesAfter += rewritten.segment.state.sizeBytes;
    }
    if (log.isClosed || log.failed) throw new PassStopped('the partition closed');
    log.markCleanedThrough(untilOffset);
    summary.cleanedThroughOffset = untilOffset;
    if (summary.segmentsCompacted > 0) {
      this.logger.info({ ...summary }, 'compacted segments');
    }
  }

  /**
   * The newest offset of each key among the closed records at and after `from`, and the offset
   * the map reaches (exclusive). Bounded by cleanerKeysMax: the map stops before the batch that
   * would take it past the bound (a first batch is always taken), and the pass cleans only up to
   * there, as Kafka's does when its map fills; the rest stays dirty for the next pass.
   */
  private async latestOffsets(
    log: PartitionLog,
    closed: readonly Segment[],
    from: number,
  ): Promise<{ latest: Map<string, number>; untilOffset: number }> {
    const latest = new Map<string, number>();
    const keysMax = this.node.config.cleanerKeysMax;
    let untilOffset = from;
    for (const segment of closed) {
      if (segment.state.nextOffset <= from) continue;
      let full = false;
      await this.forEachBatch(log, segment, segment.state.sizeBytes, (bytes, header) => {
        // The segment holding `from` begins with clean batches: not worth decoding.
        if (header.baseOffset + header.lastOffsetDelta < from) return true;
        const records = decodeRecords(bytes).filter((record) => record.offset >= from);
        if (latest.size > 0 && latest.size + records.length > keysMax) {
          full = true;
          return false;
        }
        for (const record of records) latest.set(record.key, record.offset);
        untilOffset = Math.max(untilOffset, header.baseOffset + header.lastOffsetDelta + 1);
        return true;
      });
      if (full) return { latest, untilOffset };
      untilOffset = segment.state.nextOffset;
    }
    return { latest, untilOffset };
  }

  /**
   * Every batch of a segment up to `until`, checked, and its header, while holding the segment
   * open, in slices of at most cleanerSliceMsMax with `betweenSlices` (by default a turn of the
   * event loop) after each. Throws when the segment does not read cleanly to `until`: a key map or a copy that
   * silently stopped at a damaged batch would lose every record after it; throws PassStopped when
   * the node or the partition closes meanwhile, the partition fails, or the segment was retired
   * and closed (a reloaded set).
   */
  private async forEachBatch(
    log: PartitionLog,
    segment: Segment,
    until: number,
    visit: (bytes: Buffer, header: BatchHeader, position: number) => boolean | void,
    betweenSlices: () => Promise<unknown> = yieldToLoop,
  ): Promise<void> {
    const io = this.node.config.fileIO;
    const { cleanerSliceMsMax } = this.node.config;
    segment.acquire();
    try {
      // One chunk for every slice (a fresh 1 MiB a slice was most of the cleaner's garbage), and
      // a slice goes on where the last one stopped in it rather than read it again.
      const cursor = scanCursor(until);
      let from = 0;
      let visitorDone = false;
      for (;;) {
        this.stopIfGone(log, segment);
        const sliceEndMs = performance.now() + cleanerSliceMsMax;
        const end = scanBatches(
          io,
          segment.fileDescriptor,
          { from, until, verify: true, cursor },
          ({ bytes, header, position }) => {
            visitorDone = visit(bytes, header, position) === false;
            from = position + header.sizeBytes;
            return !visitorDone && performance.now() < sliceEndMs;
          },
        );
        if (end.kind === 'end' || visitorDone) return;
        if (end.kind === 'invalid') {
          throw new CorruptLogError(
            `${segment.logPath}: corrupt batch at byte ${end.position} (${end.detail}); compaction of this partition is stopped until it is repaired`,
          );
        }
        await betweenSlices();
      }
    } finally {
      segment.release();
    }
  }

  private stopIfGone(log: PartitionLog, segment: Segment): void {
    if (this.node.closing) throw new PassStopped('the log-node is closing');
    if (log.isClosed) throw new PassStopped('the partition closed');
    if (log.failed) throw new PassStopped('the partition failed');
    if (!segment.open) throw new PassStopped('the segment was retired');
  }

  /**
   * Whether a record survives compaction. Past the map's end everything stays (dirty, unmapped).
   * Below it a record goes when the map holds its key at a newer offset; a record the map does not
   * supersede is its key's newest below the map's end (the clean part holds one a key). A tombstone
   * among those stays when it is in the dirty part: as in Kafka, a tombstone outlives the pass that
   * first cleans it, so a reader behind that pass still sees the delete (its timestamp is the
   * producer's, and the dirty-ratio gate may hold the first pass back for hours). In the clean
   * part it goes past the topic's deleteRetentionMs: every older record of its key went in the
   * pass that mapped it.
   */
  private isKept(record: StoredRecord, pass: CompactionPass): boolean {
    if (record.offset >= pass.untilOffset) return true;
    const newest = pass.latest.get(record.key);
    if (newest !== undefined && newest > record.offset) return false;
    if (record.value !== null || record.offset >= pass.fromOffset) return true;
    return pass.nowMs - record.timestampMs <= pass.deleteRetentionMs;
  }

  /**
   * The byte position of the segment's first batch the pass removes a record of, or null when it
   * removes none (the segment is rewritten only then).
   */
  private async firstRemovableAt(
    log: PartitionLog,
    segment: Segment,
    pass: CompactionPass,
  ): Promise<number | null> {
    let removableAt: number | null = null;
    await this.forEachBatch(log, segment, segment.state.sizeBytes, (bytes, _header, position) => {
      if (decodeRecords(bytes).every((record) => this.isKept(record, pass))) return true;
      removableAt = position;
      return false;
    });
    return removableAt;
  }

  /**
   * Writes the compacted copy beside the segment, makes it durable, and renames it into place;
   * null (the copy deleted, nothing renamed) when the segment left the partition's set meanwhile.
   * The batches before `removableAt` and those past the pass's map are copied undecoded: isKept
   * keeps every record of them.
   */
  private async rewrite(
    log: PartitionLog,
    segment: Segment,
    pass: CompactionPass,
    removableAt: number,
  ): Promise<{ segment: Segment; recordsRemoved: number } | null> {
    const { dir, baseOffset } = segment;
    const cleanedPath = segmentPath(dir, baseOffset, CLEANED_SUFFIX);
    const io = this.node.config.fileIO;
    const { O_CREAT, O_TRUNC, O_WRONLY, O_RDONLY } = fs.constants;
    const fd = io.open(cleanedPath, O_WRONLY | O_CREAT | O_TRUNC);
    let position = 0;
    /**
     * A slice's kept batches, written together after it; a rewrite to compress is deflated on
     * libuv's thread pool meanwhile, so cleanerSliceMsMax bounds the slice, not a deflate.
     */
    let pending: (Buffer | Promise<Buffer>)[] = [];
    const writePending = async () => {
      const slice = pending;
      pending = [];
      const buffers = await Promise.all(slice);
      // A slice that kept nothing has no write to wait for: the thread is given back all the same.
      if (buffers.length === 0) return yieldToLoop();
      await writevAll(io, fd, buffers, position);
      position += buffers.reduce((sum, b) => sum + b.length, 0);
    };
    let written = false;
    let recordsRemoved = 0;
    try {
      await this.forEachBatch(
        log,
        segment,
        segment.state.sizeBytes,
        (bytes, header, at) => {
          // The scan's chunk is read into again by the next slice: keep a copy.
          if (at < removableAt || header.baseOffset >= pass.untilOffset) {
            pending.push(Buffer.from(bytes));
            return;
          }
          const records = decodeRecords(bytes);
          const kept = records.filter((record) => this.isKept(record, pass));
          recordsRemoved += records.length - kept.length;
          if (kept.length === 0) return;
          if (kept.length === records.length) {
            pending.push(Buffer.from(bytes));
            return;
          }
          const rewritten = encodeBatch(kept, {
            baseOffset: header.baseOffset,
            leaderEpoch: header.leaderEpoch,
            producerId: header.producerId,
            producerEpoch: header.producerEpoch,
            baseSequence: header.baseSequence,
            offsetDeltas: kept.map((record) => record.offset - header.baseOffset),
            lastOffsetDelta: header.lastOffsetDelta,
          });
          // Kept in its producer's codec, as Kafka's cleaner does: compaction must not undo the
          // bytes compression saved.
          pending.push(compressBatch(rewritten, batchCodec(bytes)));
        },
        writePending,
      );
      await writePending();
      await io.fdatasyncAsync(fd);
      // A closed partition keeps its segment list: its directory may be gone (a dropped topic).
      written = !log.failed && !log.isClosed && log.closedSegments().includes(segment);
    } finally {
      io.close(fd);
      if (!written) unlinkIfExists(io, cleanedPath);
    }
    if (!written) return null;
    // Keep the segment's age: retention reads it from the file's modification time.
    const mtime = new Date(segment.state.maxTimestampMs);
    io.utimes(cleanedPath, mtime, mtime);
    // The old index must not outlive the old log: remove it first; a crash rebuilds it.
    unlinkIfExists(io, segment.indexPath);
    fsyncDir(dir, io);
    io.rename(cleanedPath, segmentPath(dir, baseOffset, LOG_SUFFIX));
    fsyncDir(dir, io);
    const readFd = io.open(segmentPath(dir, baseOffset, LOG_SUFFIX), O_RDONLY);
    const replacement = new Segment(
      dir,
      baseOffset,
      readFd,
      null,
      {
        sizeBytes: io.fstat(readFd).size,
        nextOffset: segment.state.nextOffset,
        maxTimestampMs: segment.state.maxTimestampMs,
        createdAtMs: segment.state.createdAtMs,
      },
      { io, indexIntervalBytes: this.node.config.indexIntervalBytes, writeThrough: false },
    );
    replacement.loadIndex();
    return { segment: replacement, recordsRemoved };
  }
}
