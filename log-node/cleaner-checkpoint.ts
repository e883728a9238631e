/**
 * How far a compacted partition is cleaned (Kafka's cleaner-offset-checkpoint, one file a
 * partition): below the point every key has at most one record, so a pass builds its key map from
 * the records at and after it only (the dirty part) and rewrites the whole closed log against it.
 *
 * The invariant every use keeps: a point may lie low, never high. A low point only makes a pass
 * map records that were clean already (more work). A high one would let a pass take dirty records
 * for clean: a tombstone there, past deleteRetentionMs and not in the map, would be dropped while
 * an older record of its key stays, and the key would come back. So the point is written only
 * after every swap it covers is durable (a crash between leaves the previous, lower point), and
 * a stored point is trusted only when it fits the log recovery loaded: the same topic incarnation
 * (a dropped topic's file never describes the name's next topic) and no further than the closed
 * segments reach (a point past them, as after a tail cut and offsets written again, describes
 * another log: it is removed and the whole log is dirty again). A point below the log start
 * (retention removed what it covered) counts from the log start.
 */
import path from 'node:path';
import { fsyncDir, writeFileAtomic } from '../shared/durable-files.js';
import { type FileIO, isErrno, unlinkIfExists } from '../shared/file-io.js';

export const CLEANER_CHECKPOINT_FILE = 'cleaner-checkpoint';

export interface CleanerCheckpoint {
  /** Offsets below this are clean. */
  cleanedThroughOffset: number;
  /** The topic incarnation the point was written for. */
  incarnation: number;
}

/** The stored point, or null when there is none or it cannot be read (the log is all dirty). */
export function readCleanerCheckpoint(io: FileIO, dir: string): CleanerCheckpoint | null {
  let text: string;
  try {
    text = io.readFile(path.join(dir, CLEANER_CHECKPOINT_FILE)).toString('utf8');
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return null;
    throw error;
  }
  try {
    const parsed = JSON.parse(text) as Partial<CleanerCheckpoint>;
    const { cleanedThroughOffset, incarnation } = parsed;
    if (!Number.isSafeInteger(cleanedThroughOffset) || cleanedThroughOffset! < 0) return null;
    if (!Number.isSafeInteger(incarnation) || incarnation! < 0) return null;
    return { cleanedThroughOffset: cleanedThroughOffset!, incarnation: incarnation! };
  } catch {
    return null;
  }
}

/** Forgets the point durably: the whole log is dirty. */
export function removeCleanerCheckpoint(io: FileIO, dir: string): void {
  unlinkIfExists(io, path.join(dir, CLEANER_CHECKPOINT_FILE));
  fsyncDir(dir, io);
}

/** Written atomically and fsynced with its directory: a crash leaves the old point or the new. */
export function writeCleanerCheckpoint(io: FileIO, dir: string, point: CleanerCheckpoint): void {
  const bytes = Buffer.from(JSON.stringify(point) + '\n');
  writeFileAtomic(path.join(dir, CLEANER_CHECKPOINT_FILE), bytes, io);
}

/**
 * Whether a stored point may describe the log recovery just loaded, whose closed segments end at
 * `closedEndOffset`: not when it is another incarnation's, nor when it lies past those segments
 * (a tail cut and its offsets written again would make it cover records never cleaned). One that
 * does not fit is dropped from disk at once, before appends move the log past it.
 */
export function checkpointFits(
  stored: CleanerCheckpoint,
  log: { incarnation: number; closedEndOffset: number },
): boolean {
  return (
    stored.incarnation === log.incarnation && stored.cleanedThroughOffset <= log.closedEndOffset
  );
}

/** A closed segment as the dirty ratio weighs it. */
interface SizedSegment {
  readonly baseOffset: number;
  readonly state: { readonly sizeBytes: number; readonly nextOffset: number };
}

/**
 * The bytes of the closed segments at and after the point (the share of a segment the point cuts
 * is estimated by its offsets), and of all of them: what Kafka's min.cleanable.dirty.ratio
 * weighs. The active segment is neither: it is never cleaned.
 */
function dirtyBytesOf(
  closed: readonly SizedSegment[],
  cleanedThroughOffset: number,
): { dirtyBytes: number; totalBytes: number } {
  let dirtyBytes = 0;
  let totalBytes = 0;
  for (const { baseOffset, state } of closed) {
    totalBytes += state.sizeBytes;
    if (state.nextOffset <= cleanedThroughOffset) continue;
    if (baseOffset >= cleanedThroughOffset) {
      dirtyBytes += state.sizeBytes;
      continue;
    }
    const share = (state.nextOffset - cleanedThroughOffset) / (state.nextOffset - baseOffset);
    dirtyBytes += Math.round(state.sizeBytes * share);
  }
  return { dirtyBytes, totalBytes };
}

/** Dirty bytes over closed bytes; 0 for a partition with no closed byte. */
function dirtyRatioOf(share: { dirtyBytes: number; totalBytes: number }): number {
  return share.totalBytes === 0 ? 0 : share.dirtyBytes / share.totalBytes;
}

/**
 * Where the cleaner stands on a log: its point and the closed bytes past it, as the cleaner's gate
 * weighs them and the partition status shows them.
 */
export function dirtyShareOf(log: {
  closedSegments(): readonly SizedSegment[];
  readonly cleanedThroughOffset: number;
}): { cleanedThroughOffset: number; dirtyBytes: number; dirtyRatio: number } {
  const { cleanedThroughOffset } = log;
  const share = dirtyBytesOf(log.closedSegments(), cleanedThroughOffset);
  return { cleanedThroughOffset, dirtyBytes: share.dirtyBytes, dirtyRatio: dirtyRatioOf(share) };
}
