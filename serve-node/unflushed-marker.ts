/**
 * The stores commit without fsync (LMDB `noSync`, SQLite WAL with `synchronous=NORMAL` and no
 * automatic checkpoints), so a commit costs a write to the page cache and nothing more; the
 * replica flushes them on an interval (`storeFlushMs`). A process crash loses nothing (the kernel
 * still holds every page); a power loss or kernel crash takes back the commits since the last
 * flush. So while the stores are open a marker file next to them names the boot (Linux's boot id)
 * under which they may hold unflushed pages; a clean close flushes the files and removes the
 * marker. Stores whose marker names another boot are rolled back to their last flush before they
 * open (LMDB's sync point, lmdb-sync-point.ts; SQLite recovers its WAL by itself) and replay the
 * log from their checkpoints; stores never flushed are rebuilt from the log. Where no boot id can
 * be read, LMDB fsyncs every commit.
 */
import fs from 'node:fs';
import path from 'node:path';
import { currentBootId } from '../shared/boot-id.js';
import { fsyncDir, fsyncPath, writeFileAtomic } from '../shared/durable-files.js';
import { DOCS_FILE } from './doc-store.js';
import { restoreSyncPoint } from './lmdb-sync-point.js';

const MARKER_FILE = 'unflushed-boot-id';

/** True when the stores in `dir` were left open, unflushed, by an earlier boot of this machine. */
export function unflushedSinceEarlierBoot(dir: string): boolean {
  let marked: string;
  try {
    marked = fs.readFileSync(path.join(dir, MARKER_FILE), 'utf8').trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
  return marked !== currentBootId();
}

/**
 * Rolls the stores in `dir`, left unflushed by an earlier boot, back to their last flush; false
 * when they were never flushed (they may be torn: the caller rebuilds them).
 */
export function rollBackToLastFlush(dir: string): boolean {
  return restoreSyncPoint(path.join(dir, DOCS_FILE));
}

export function markUnflushed(dir: string, bootId: string): void {
  writeFileAtomic(path.join(dir, MARKER_FILE), Buffer.from(`${bootId}\n`));
}

/**
 * Flushes the closed stores' `files` of `dir` (every page any process wrote to them; a file the
 * store removed as it closed, such as SQLite's WAL, is skipped), then removes the marker.
 */
export function flushAndClearMarker(dir: string, files: readonly string[]): void {
  for (const file of files) {
    if (fs.existsSync(path.join(dir, file))) fsyncPath(path.join(dir, file));
  }
  fs.rmSync(path.join(dir, MARKER_FILE), { force: true });
  fsyncDir(dir);
}
