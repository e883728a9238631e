/**
 * File names of a partition directory, Kafka's scheme: the base offset padded to 20 digits, one
 * suffix per kind of file. Writes that must be all-or-nothing go to a temporary suffix first and
 * are renamed into place.
 */
import fs from 'node:fs';
import path from 'node:path';

export const LOG_SUFFIX = '.log';
export const INDEX_SUFFIX = '.index';
export const PRODUCERS_SUFFIX = '.producers';
/** A compacted segment being written; never read, deleted on recovery. */
export const CLEANED_SUFFIX = '.cleaned';
export const TEMP_SUFFIX = '.tmp';

export function baseName(baseOffset: number): string {
  return String(baseOffset).padStart(20, '0');
}

export function segmentPath(dir: string, baseOffset: number, suffix: string): string {
  return path.join(dir, baseName(baseOffset) + suffix);
}

/** The base offsets of the files with a suffix, ascending. */
export function listBaseOffsets(dir: string, suffix: string): number[] {
  const pattern = new RegExp(`^(\\d{20})${suffix.replace('.', '\\.')}$`);
  return fs
    .readdirSync(dir)
    .map((name) => pattern.exec(name))
    .filter((match): match is RegExpExecArray => match !== null)
    .map((match) => Number(match[1]))
    .sort((a, b) => a - b);
}

/** Makes a rename or unlink in `dir` durable. */
export function fsyncDir(dir: string): void {
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
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
