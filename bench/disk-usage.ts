/**
 * Bytes a data directory holds on disk, by component: the log's segments, LMDB and SQLite. Counted
 * as allocated blocks, not file lengths: LMDB's map may be longer than what it wrote.
 */
import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

export interface DiskUsage {
  logBytes: number;
  lmdbBytes: number;
  sqliteBytes: number;
  otherBytes: number;
  totalBytes: number;
}

const BLOCK_BYTES = 512;

/** By the path under the data directory: the log-node's folder is `log/`. */
function component(relative: string): keyof Omit<DiskUsage, 'totalBytes'> {
  if (relative.startsWith('log/')) return 'logBytes';
  if (/\.mdb(-|$)/.test(relative)) return 'lmdbBytes';
  if (/\.sqlite(-|$)/.test(relative)) return 'sqliteBytes';
  return 'otherBytes';
}

/** Every file under `dir` (a `tailbase start` data directory), by component. */
export function diskUsage(dir: string): DiskUsage {
  const usage: DiskUsage = {
    logBytes: 0,
    lmdbBytes: 0,
    sqliteBytes: 0,
    otherBytes: 0,
    totalBytes: 0,
  };
  const walk = (relative: string) => {
    const stat = lstatSync(join(dir, relative));
    if (stat.isDirectory()) {
      for (const name of readdirSync(join(dir, relative)))
        walk(relative ? `${relative}/${name}` : name);
      return;
    }
    const bytes = stat.blocks * BLOCK_BYTES;
    usage[component(relative)] += bytes;
    usage.totalBytes += bytes;
  };
  walk('');
  return usage;
}

/** Readings of diskUsageAtRest: this far apart, at most this many. */
export interface RestPolls {
  pollMs: number;
  pollsMax: number;
}

const REST_POLLS: RestPolls = { pollMs: 3_000, pollsMax: 100 };

/**
 * Bytes on disk once they stop moving (two readings `pollMs` apart agree), taken after `settled`
 * (api-workloads.ts) found the background steps done: what is left to move is the search store's
 * WAL, emptied by the first flush that finds the store idle. Throws when `pollsMax` readings
 * never agreed: the last would be a figure of a store still moving.
 */
export async function diskUsageAtRest(
  dir: string,
  { pollMs, pollsMax }: RestPolls = REST_POLLS,
): Promise<DiskUsage> {
  let last = diskUsage(dir);
  for (let polls = 0; polls < pollsMax; polls++) {
    await new Promise((resolve) => setTimeout(resolve, pollMs));
    const now = diskUsage(dir);
    if (now.totalBytes === last.totalBytes) return now;
    last = now;
  }
  throw new Error(
    `${dir}: bytes on disk still moving after ${pollsMax} readings ${pollMs} ms apart (last ${last.totalBytes})`,
  );
}
