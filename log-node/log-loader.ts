/**
 * Opens a partition directory after a clean stop or a crash. Finishes or discards interrupted
 * file operations, scans the active segment batch by batch and truncates a torn tail (or a write
 * torn in pieces past the recovery point), and rebuilds producer state. Damage followed by valid
 * data below the recovery point stops the partition: it is acknowledged data, and serving past it
 * would hand out garbage or lose acknowledged writes silently.
 */
import fs from 'node:fs';
import path from 'node:path';
import {
  BATCH_HEADER_BYTES,
  BATCH_MAGIC,
  checkBatch,
  readBatchHeader,
} from '../shared/batch-codec.js';
import type { Logger } from '../shared/logger.js';
import { SCAN_CHUNK_BYTES, scanBatches } from './batch-scanner.js';
import { OffsetIndex } from './offset-index.js';
import { lastSequenceOf, ProducerState } from './producer-state.js';
import { readRecoveryPoint, type StoredRecoveryPoint, tornWriteFrom } from './recovery-point.js';
import { appendFlags, Segment, type SegmentOptions } from './segment.js';
import {
  CLEANED_SUFFIX,
  LOG_SUFFIX,
  listBaseOffsets,
  PRODUCERS_SUFFIX,
  segmentPath,
} from './segment-files.js';
import { TEMP_SUFFIX, fsyncDir, mkdirDurable } from '../shared/durable-files.js';
import type { FileIO } from '../shared/file-io.js';

/** Where the magic byte sits in a batch header (shared/FORMAT.md). */
const MAGIC_AT = 16;

export class CorruptLogError extends Error {
  override name = 'CorruptLogError';
}

export interface LoadedPartition {
  segments: Segment[];
  producers: ProducerState;
  truncatedBytes: number;
  /** The recovery point as recovery found it; the partition stores the recovered end next. */
  recoveryPoint: StoredRecoveryPoint;
}

export interface LoadOptions extends SegmentOptions {
  producerRecentBatchesMax: number;
  producerExpiryMs: number;
  nowMs: number;
  logger: Logger;
}

export function loadPartition(dir: string, options: LoadOptions): LoadedPartition {
  const { io } = options;
  mkdirDurable(dir, io);
  removeLeftovers(io, dir, options.logger);
  const recoveryPoint = readRecoveryPoint(io, dir);
  const bases = listBaseOffsets(io, dir, LOG_SUFFIX);
  if (bases.length === 0) {
    const segment = Segment.create(dir, 0, options.nowMs, options);
    fsyncDir(dir, io);
    return {
      segments: [segment],
      producers: new ProducerState(options.producerRecentBatchesMax, options.producerExpiryMs),
      truncatedBytes: 0,
      recoveryPoint,
    };
  }
  const segments: Segment[] = bases
    .slice(0, -1)
    .map((base, i) => openClosed(dir, base, bases[i + 1], options));
  const activeBase = bases[bases.length - 1];
  const { segment: active, truncatedBytes } = recoverActive(
    dir,
    activeBase,
    tornWriteFrom(recoveryPoint, activeBase),
    options,
  );
  segments.push(active);
  const producers = loadProducers(dir, segments, options);
  return { segments, producers, truncatedBytes, recoveryPoint };
}

/** A crash during compaction or an atomic write leaves these; the originals are intact. */
function removeLeftovers(io: FileIO, dir: string, logger: Logger): void {
  for (const name of io.readdir(dir)) {
    if (name.endsWith(CLEANED_SUFFIX) || name.endsWith(TEMP_SUFFIX)) {
      io.unlink(path.join(dir, name));
      logger.warn({ dir, file: name }, 'removed an unfinished file left by a crash');
    }
  }
}

function openClosed(dir: string, base: number, nextBase: number, options: SegmentOptions): Segment {
  const file = segmentPath(dir, base, LOG_SUFFIX);
  const fd = options.io.open(file, fs.constants.O_RDONLY);
  const stat = options.io.fstat(fd);
  return new Segment(
    dir,
    base,
    fd,
    null,
    {
      sizeBytes: stat.size,
      nextOffset: nextBase,
      maxTimestampMs: stat.mtimeMs,
      createdAtMs: stat.mtimeMs,
    },
    options,
  );
}

/**
 * Scans the active segment and cuts what a crash may have torn. `tornFromBytes`: damage at or
 * past it that valid data follows may be the write in flight at the crash (recovery-point.ts).
 */
function recoverActive(
  dir: string,
  base: number,
  tornFromBytes: number,
  options: LoadOptions,
): { segment: Segment; truncatedBytes: number } {
  const file = segmentPath(dir, base, LOG_SUFFIX);
  const { io } = options;
  const fd = io.open(file, appendFlags(options, false));
  const stat = io.fstat(fd);
  const segment = new Segment(
    dir,
    base,
    fd,
    new OffsetIndex(),
    {
      sizeBytes: 0,
      nextOffset: base,
      maxTimestampMs: -1,
      createdAtMs: stat.birthtimeMs || stat.mtimeMs,
    },
    options,
  );
  let expectedOffset = base;
  let offsetError: { position: number; detail: string } | null = null;
  const end = scanBatches(io, fd, { until: stat.size, verify: true }, (batch) => {
    if (batch.header.baseOffset !== expectedOffset) {
      offsetError = {
        position: batch.position,
        detail: `batch at byte ${batch.position} has base offset ${batch.header.baseOffset}, expected ${expectedOffset}`,
      };
      return false;
    }
    segment.maybeIndex(batch.header.baseOffset, batch.position, batch.header.sizeBytes);
    expectedOffset = batch.header.baseOffset + batch.header.lastOffsetDelta + 1;
    segment.state.sizeBytes = batch.position + batch.header.sizeBytes;
    segment.state.nextOffset = expectedOffset;
    segment.state.maxTimestampMs = Math.max(
      segment.state.maxTimestampMs,
      batch.header.maxTimestampMs,
    );
  });
  const truncate = (position: number, detail: string, message: string) => {
    const truncatedBytes = stat.size - position;
    segment.truncate(position);
    options.logger.warn(
      { file, position, truncatedBytes, reason: detail, recoveryPointBytes: tornFromBytes },
      message,
    );
    return { segment, truncatedBytes };
  };
  const tornInPieces =
    'truncated a write torn in pieces past the recovery point (never acknowledged)';
  // A whole batch at the wrong base offset: its base offset (outside the CRC) was in a sector the
  // power cut lost and the rest in sectors it kept, or it was damaged in place.
  const wrongOffset = offsetError as { position: number; detail: string } | null;
  if (wrongOffset !== null) {
    if (wrongOffset.position < tornFromBytes) {
      throw new CorruptLogError(`${file}: ${wrongOffset.detail}`);
    }
    return truncate(wrongOffset.position, wrongOffset.detail, tornInPieces);
  }
  // Below a stored recovery point every byte was acknowledged: damage there, or a file that ends
  // before it, stops the partition whatever follows. Without a point (a directory from before
  // recovery points) only damage with valid data after it does.
  const acknowledgedToBytes = Number.isFinite(tornFromBytes) ? tornFromBytes : 0;
  if (end.kind === 'invalid') {
    const validFollows = validBatchFollows(io, fd, end.position, stat.size);
    if (validFollows && end.position < tornFromBytes) {
      const point = Number.isFinite(tornFromBytes)
        ? `below the recovery point (byte ${tornFromBytes}), so it was acknowledged`
        : 'and no recovery point says it was not acknowledged';
      throw new CorruptLogError(
        `${file}: corrupt batch at byte ${end.position} (${end.detail}) is followed by valid data ${point}; refusing to serve past it`,
      );
    }
    if (end.position < acknowledgedToBytes) {
      throw new CorruptLogError(
        `${file}: corrupt batch at byte ${end.position} (${end.detail}) ends the file below the recovery point (byte ${tornFromBytes}), so it was acknowledged; refusing to cut it`,
      );
    }
    return truncate(
      end.position,
      end.detail,
      validFollows ? tornInPieces : 'truncated a torn tail',
    );
  }
  if (segment.state.sizeBytes < acknowledgedToBytes) {
    throw new CorruptLogError(
      `${file}: ends at byte ${segment.state.sizeBytes}, before the recovery point (byte ${tornFromBytes}): acknowledged batches are missing`,
    );
  }
  return { segment, truncatedBytes: 0 };
}

/**
 * Whether a good batch starts after a bad one: damage in place, not a torn write. A damaged length
 * field (outside the CRC) hides where the next batch starts, and may even make the bad batch look
 * cut short, so every later position in the file is tried. The next batch may be larger than
 * today's batchBytesMax (it was appended under the limit of its day), so only the file bounds it;
 * the file is searched a chunk at a time and a candidate is read whole only when it fits the file.
 */
function validBatchFollows(io: FileIO, fd: number, position: number, fileBytes: number): boolean {
  const chunk = Buffer.allocUnsafe(Math.min(fileBytes - position, SCAN_CHUNK_BYTES));
  let chunkStart = position;
  for (;;) {
    const bytesRead = io.read(fd, chunk, 0, chunk.length, chunkStart);
    const first = chunkStart === position ? 1 : 0;
    for (let at = first; at + BATCH_HEADER_BYTES <= bytesRead; at++) {
      if (chunk[at + MAGIC_AT] !== BATCH_MAGIC) continue;
      const { sizeBytes } = readBatchHeader(chunk, at)!;
      const start = chunkStart + at;
      if (sizeBytes < BATCH_HEADER_BYTES || start + sizeBytes > fileBytes) continue;
      const candidate =
        at + sizeBytes <= bytesRead
          ? chunk.subarray(at, at + sizeBytes)
          : readExactly(io, fd, start, sizeBytes);
      if (checkBatch(candidate, 0).ok) return true;
    }
    // The next chunk starts at the first position this one held no whole header for.
    chunkStart += Math.max(bytesRead - BATCH_HEADER_BYTES + 1, 1);
    if (bytesRead < chunk.length || chunkStart + BATCH_HEADER_BYTES > fileBytes) return false;
  }
}

function readExactly(io: FileIO, fd: number, position: number, length: number): Buffer {
  const bytes = Buffer.allocUnsafe(length);
  const bytesRead = io.read(fd, bytes, 0, length, position);
  return bytes.subarray(0, bytesRead);
}

/** The newest producer snapshot not past the active segment, then every batch after it. */
function loadProducers(dir: string, segments: Segment[], options: LoadOptions): ProducerState {
  const activeBase = segments[segments.length - 1].baseOffset;
  const { io } = options;
  const snapshots = listBaseOffsets(io, dir, PRODUCERS_SUFFIX).filter((base) => base <= activeBase);
  let producers = new ProducerState(options.producerRecentBatchesMax, options.producerExpiryMs);
  let fromOffset = segments[0].baseOffset;
  for (const base of snapshots.reverse()) {
    try {
      producers = ProducerState.decode(
        io.readFile(segmentPath(dir, base, PRODUCERS_SUFFIX)),
        options.producerRecentBatchesMax,
        options.producerExpiryMs,
      );
      fromOffset = base;
      break;
    } catch (error) {
      options.logger.warn(
        { dir, base, err: error },
        'unreadable producer snapshot; trying an older one',
      );
    }
  }
  for (const segment of segments) {
    if (segment.state.nextOffset <= fromOffset) continue;
    scanBatches(
      io,
      segment.fileDescriptor,
      { until: segment.state.sizeBytes, verify: false },
      ({ header }) => {
        if (header.baseOffset < fromOffset) return;
        producers.record(
          {
            producerId: header.producerId,
            producerEpoch: header.producerEpoch,
            firstSequence: header.baseSequence,
            lastSequence: lastSequenceOf(header.baseSequence, header.lastOffsetDelta),
          },
          { baseOffset: header.baseOffset, lastOffset: header.baseOffset + header.lastOffsetDelta },
          header.maxTimestampMs,
        );
      },
    );
  }
  producers.expire(options.nowMs);
  return producers;
}
