/**
 * The stores commit without fsync (LMDB `noSync`, SQLite `synchronous=OFF`), so a commit costs a
 * write to the page cache and nothing more. A process crash loses nothing (the kernel still holds
 * every page); a power loss or kernel crash may tear the files. So while the stores are open a
 * marker file next to them names the boot (Linux's boot id) under which they may hold unflushed
 * pages; a clean close flushes the files and removes the marker. Stores whose marker names another
 * boot may be torn and are rebuilt from the log. Where no boot id can be read, the stores fsync as
 * they normally do (LMDB every commit, SQLite at WAL checkpoints).
 */
import fs from 'node:fs';
import path from 'node:path';
import { currentBootId } from '../shared/boot-id.js';
import { fsyncDir, fsyncPath, writeFileAtomic } from '../shared/durable-files.js';

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
