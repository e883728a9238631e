/**
 * Writes that must survive a power loss whole or not at all: a directory entry made durable, and
 * a whole file replaced crash-safely (written under a temporary name, fsynced, renamed into place).
 */
import fs from 'node:fs';
import path from 'node:path';

/** A file being written under its final name plus this suffix; never read, deleted on recovery. */
export const TEMP_SUFFIX = '.tmp';

/** Flushes a file's (or a directory's) written pages, whoever wrote them. */
export function fsyncPath(file: string): void {
  const fd = fs.openSync(file, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** Makes a rename or unlink in `dir` durable. */
export function fsyncDir(dir: string): void {
  fsyncPath(dir);
}

/** Writes a whole file crash-safely: temporary name, fsync, rename, fsync of the directory. */
export function writeFileAtomic(file: string, bytes: Uint8Array): void {
  const temp = file + TEMP_SUFFIX;
  const fd = fs.openSync(temp, 'w');
  try {
    fs.writeSync(fd, bytes);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(temp, file);
  fsyncDir(path.dirname(file));
}
