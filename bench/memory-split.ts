/**
 * A process's resident memory split as issue 26 asks: anonymous (heaps, caches the process
 * allocates, what configuration has to bound) and mapped files (LMDB's and SQLite's maps, which
 * the kernel may drop and read back), from /proc/PID/smaps_rollup.
 */
import { readFileSync } from 'node:fs';

export interface MemorySplit {
  anonymousBytes: number;
  mappedFileBytes: number;
}

export function readMemorySplit(pid: number): MemorySplit {
  let rollup: string;
  try {
    rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  } catch {
    return { anonymousBytes: 0, mappedFileBytes: 0 };
  }
  const kb = (field: string) =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(rollup)?.[1] ?? 0);
  const anonymous = kb('Anonymous') * 1024;
  return { anonymousBytes: anonymous, mappedFileBytes: kb('Rss') * 1024 - anonymous };
}
