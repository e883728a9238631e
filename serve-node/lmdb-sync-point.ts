/**
 * A point LMDB can be rolled back to after a power loss, although it commits with `noSync`.
 *
 * Unsynced LMDB commits are not power-safe on their own: the kernel writes dirty pages back in any
 * order, so a meta page may reach the disk before the pages it points to, and pages of the last
 * synced snapshot are freed and reused by later commits. A sync point closes both holes:
 * 1. the data file is fdatasynced, so every page of the latest commit (and its two meta pages,
 *    pages 0 and 1 of the file) is on disk;
 * 2. those two meta pages are copied into a side file, written atomically (fsynced, renamed);
 * 3. a read transaction stays open on that snapshot until the next sync point, so no commit
 *    reuses a page it references (LMDB frees a page for reuse only once no reader can see it).
 * After a power loss the side file's meta pages are written back over the file's, which rolls the
 * environment back to the snapshot of the last sync point: its pages are all on disk and none was
 * overwritten since. Later commits only wrote pages that snapshot does not reference.
 */
import fs from 'node:fs';
import { assert } from '../shared/assert.js';
import { fsyncPath, writeFileAtomic } from '../shared/durable-files.js';
import { isErrno } from '../shared/file-io.js';

/** LMDB keeps its two meta pages at the start of the data file. */
const META_PAGES = 2;
export const SYNC_POINT_SUFFIX = '-sync-point';

/** Flushes the data file at `path` and records its meta pages beside it (steps 1 and 2 above). */
export function recordSyncPoint(path: string, pageBytes: number): void {
  const fd = fs.openSync(path, 'r');
  try {
    fs.fdatasyncSync(fd);
    const metas = Buffer.alloc(META_PAGES * pageBytes);
    const read = fs.readSync(fd, metas, 0, metas.length, 0);
    assert(read === metas.length, `${path}: read ${read} bytes of its meta pages`);
    writeFileAtomic(path + SYNC_POINT_SUFFIX, metas);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Writes the last sync point's meta pages back over the data file at `path`; false (nothing
 * changed) when no sync point was ever recorded.
 */
export function restoreSyncPoint(path: string): boolean {
  let metas: Buffer;
  try {
    metas = fs.readFileSync(path + SYNC_POINT_SUFFIX);
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return false;
    throw error;
  }
  const fd = fs.openSync(path, 'r+');
  try {
    const written = fs.writeSync(fd, metas, 0, metas.length, 0);
    assert(written === metas.length, `${path}: wrote ${written} bytes of its meta pages`);
  } finally {
    fs.closeSync(fd);
  }
  fsyncPath(path);
  return true;
}
