/**
 * The document store commits without fsync (LMDB `noSync`), so a commit costs a write to the page
 * cache and nothing more. A process crash loses nothing (the kernel still holds every page); a
 * power loss or kernel crash may tear the file. So while the store is open a marker file next to
 * it names the boot (Linux's boot id) under which it may hold unflushed pages; a clean close
 * flushes the file and removes the marker. A store whose marker names another boot may be torn
 * and is rebuilt from the log. Where no boot id can be read, the store fsyncs as LMDB normally does.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fsyncDir, fsyncPath, writeFileAtomic } from '../shared/durable-files.js';

const MARKER_FILE = 'unflushed-boot-id';
const BOOT_ID_FILE = '/proc/sys/kernel/random/boot_id';

export function currentBootId(): string | null {
  try {
    return fs.readFileSync(BOOT_ID_FILE, 'utf8').trim() || null;
  } catch {
    return null;
  }
}

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

/** Flushes `file` (every page any process wrote to it), then removes the marker of its dir. */
export function flushAndClearMarker(file: string): void {
  fsyncPath(file);
  const dir = path.dirname(file);
  fs.rmSync(path.join(dir, MARKER_FILE), { force: true });
  fsyncDir(dir);
}
