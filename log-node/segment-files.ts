/**
 * File names of a partition directory, Kafka's scheme: the base offset padded to 20 digits, one
 * suffix per kind of file. Writes that must be all-or-nothing go through shared/durable-files.ts.
 */
import path from 'node:path';
import type { FileIO } from '../shared/file-io.js';

export const LOG_SUFFIX = '.log';
export const INDEX_SUFFIX = '.index';
export const PRODUCERS_SUFFIX = '.producers';
/** A compacted segment being written; never read, deleted on recovery. */
export const CLEANED_SUFFIX = '.cleaned';

export function baseName(baseOffset: number): string {
  return String(baseOffset).padStart(20, '0');
}

export function segmentPath(dir: string, baseOffset: number, suffix: string): string {
  return path.join(dir, baseName(baseOffset) + suffix);
}

/** The base offsets of the files with a suffix, ascending. */
export function listBaseOffsets(io: FileIO, dir: string, suffix: string): number[] {
  const pattern = new RegExp(`^(\\d{20})${suffix.replace('.', '\\.')}$`);
  return io
    .readdir(dir)
    .map((name) => pattern.exec(name))
    .filter((match): match is RegExpExecArray => match !== null)
    .map((match) => Number(match[1]))
    .sort((a, b) => a - b);
}
