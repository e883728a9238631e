/**
 * The serve-node's cache bounds reach its stores: `tailbase start --sqlite-cache-bytes-max
 * --sqlite-mmap-bytes-max` with two read threads and key reads on the HTTP thread (`--key-reads
 * here`, so that every kind of connection is there) reports, in /v1/status, every connection to the
 * search store (the apply thread's, the key reader's and each read thread's) under those bounds as
 * SQLite reads them back (PRAGMA cache_size and mmap_size on that very connection); without the
 * flags, SQLite's defaults. Each other cache is named with the flag that bounds it, the
 * gateway's (queued writes, change feeds, their epoch counts, each feed's reads for them) too.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { spawnEmbedded, type SpawnedEmbedded } from '../harness/embedded.js';
import { sleep } from '../harness/spawn-node.js';
import { call } from './gateway-harness.js';

type Bound = {
  name: string;
  flag: string | null;
  scope: string;
  limit: number | null;
  current: number | null;
};

const CACHE_BYTES = 3 * 1024 * 1024;
const MMAP_BYTES = 1024 * 1024;
const READ_THREADS = 2;
/** The apply thread, the HTTP thread's key reader and each read thread. */
const CONNECTIONS = 2 + READ_THREADS;
const REPORT_WAIT_MS_MAX = 10_000;
const POLL_MS = 100;

const running: SpawnedEmbedded[] = [];
afterAll(async () => {
  await Promise.all(running.map((node) => node.stop()));
});

/** The serve-node's memory bounds once every connection has reported its own, and the gateway's. */
async function boundsOf(args: string[]): Promise<Bound[]> {
  return (await statusOf(args)).serve;
}

async function statusOf(args: string[]): Promise<{ serve: Bound[]; gateway: Bound[] }> {
  const node = await spawnEmbedded({
    args: ['--read-threads', String(READ_THREADS), '--key-reads', 'here', ...args],
  });
  running.push(node);
  const deadline = Date.now() + REPORT_WAIT_MS_MAX;
  for (;;) {
    const status = await call(node.url, 'GET', '/v1/status');
    expect(status.status).toBe(200);
    const memory = status.body.serveNodes[0].memory as Bound[];
    const caches = memory.filter((bound) => bound.name === 'sqlite page cache');
    if (caches.length >= CONNECTIONS || Date.now() > deadline) {
      return { serve: memory, gateway: status.body.memory as Bound[] };
    }
    await sleep(POLL_MS);
  }
}

describe('memory bounded by configuration', () => {
  it("SQLite's page cache and memory map flags reach every connection, read threads' too", async () => {
    const memory = await boundsOf([
      '--sqlite-cache-bytes-max',
      String(CACHE_BYTES),
      '--sqlite-mmap-bytes-max',
      String(MMAP_BYTES),
    ]);
    const caches = memory.filter((bound) => bound.name === 'sqlite page cache');
    const maps = memory.filter((bound) => bound.name === 'sqlite memory map');
    expect(caches.map((bound) => bound.scope)).toEqual(
      expect.arrayContaining(['apply thread', expect.stringMatching(/^read thread \d+$/)]),
    );
    expect(caches).toHaveLength(CONNECTIONS);
    for (const bound of caches)
      expect(bound).toMatchObject({ limit: CACHE_BYTES, flag: 'sqlite-cache-bytes-max' });
    expect(maps).toHaveLength(CONNECTIONS);
    for (const bound of maps)
      expect(bound).toMatchObject({ limit: MMAP_BYTES, flag: 'sqlite-mmap-bytes-max' });
    expect(new Set(memory.map((bound) => bound.flag))).toEqual(
      new Set([
        'sqlite-cache-bytes-max',
        'sqlite-mmap-bytes-max',
        null,
        'facet-values-held-max',
        'search-topk-known-terms-max',
        'log-read-bytes-max',
        'apply-slice-bytes-max',
        'waiters-max',
      ]),
    );
    const lmdb = memory.find((bound) => bound.name === 'lmdb memory map');
    expect(lmdb?.current).toBeGreaterThan(0);
  });

  it("names the gateway's queued writes, change feeds, their epoch counts and reads with their flags' limits", async () => {
    const { gateway } = await statusOf([
      '--pending-bytes-max',
      '5000000',
      '--feeds-max',
      '7',
      '--feed-epoch-partitions-max',
      '9',
      '--feed-epoch-reads-max',
      '5',
    ]);
    expect(gateway).toEqual([
      expect.objectContaining({ flag: 'pending-bytes-max', limit: 5_000_000, current: 0 }),
      expect.objectContaining({ flag: 'feeds-max', limit: 7, current: 0 }),
      expect.objectContaining({ flag: 'feed-epoch-partitions-max', limit: 9, current: 0 }),
      expect.objectContaining({
        flag: 'feed-epoch-reads-max',
        limit: 5,
        current: 0,
        unit: 'reads',
        scope: expect.stringMatching(/^each change feed/),
      }),
    ]);
  });

  it("without the flags every connection has SQLite's defaults: a 2000 KiB cache, no map", async () => {
    const memory = await boundsOf([]);
    const caches = memory.filter((bound) => bound.name === 'sqlite page cache');
    expect(caches).toHaveLength(CONNECTIONS);
    for (const bound of caches) expect(bound.limit).toBe(2000 * 1024);
    for (const bound of memory.filter((b) => b.name === 'sqlite memory map')) {
      expect(bound.limit).toBe(0);
    }
  });
});
