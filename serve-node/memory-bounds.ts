/**
 * The serve-node's memory, named: each cache and buffer with the flag that bounds it, the bound in
 * force and, where it can be measured, its size now (/internal/status `memory`, and each
 * serve-node's row of the gateway's /v1/status). SQLite's bounds are read back from each
 * connection (PRAGMA cache_size and mmap_size), so what is reported is what the store applies,
 * not what was asked. better-sqlite3 does not expose sqlite3_db_status, so a page cache's fill
 * is not measured.
 */
import type { MemoryBound } from '../shared/serve-api.js';
import type { ServeNodeLimits } from './config.js';
import type { SqliteConnectionMemory } from './search-store.js';

export interface MemoryFacts {
  limits: ServeNodeLimits;
  /** The apply thread's connection to the search store. */
  applyConnection: SqliteConnectionMemory;
  /** Each read thread's connection, by thread id, as it reported it. */
  readConnections: ReadonlyMap<number, SqliteConnectionMemory>;
  /** Reads waiting on the apply thread for offsets. */
  waiting: number;
  /** Fetchers tailing the log, each holding one log read answer at a time. */
  fetchers: number;
  /** LMDB's memory map of docs.mdb now. */
  lmdbMapBytes: number;
}

export function memoryBounds(facts: MemoryFacts): MemoryBound[] {
  const { limits } = facts;
  const connections: [string, SqliteConnectionMemory][] = [
    ['apply thread', facts.applyConnection],
    ...[...facts.readConnections].map(([thread, memory]): [string, SqliteConnectionMemory] => [
      thread === 0 ? 'main thread (key reads)' : `read thread ${thread}`,
      memory,
    ]),
  ];
  return [
    ...connections.map(([scope, memory]) => ({
      name: 'sqlite page cache',
      flag: 'sqlite-cache-bytes-max',
      scope,
      limit: memory.cacheBytesMax,
      unit: 'bytes' as const,
      current: null,
      kind: 'anonymous' as const,
    })),
    ...connections.map(([scope, memory]) => ({
      name: 'sqlite memory map',
      flag: 'sqlite-mmap-bytes-max',
      scope,
      limit: memory.mmapBytesMax,
      unit: 'bytes' as const,
      current: null,
      kind: 'mapped' as const,
    })),
    {
      name: 'lmdb memory map',
      flag: null,
      scope: 'the node',
      limit: null,
      unit: 'bytes',
      current: facts.lmdbMapBytes,
      kind: 'mapped',
    },
    {
      name: 'facet values held',
      flag: 'facet-values-held-max',
      scope: 'each thread',
      limit: limits.facetValuesHeldMax,
      unit: 'entries',
      current: null,
      kind: 'anonymous',
    },
    {
      name: 'log read answer',
      flag: 'log-read-bytes-max',
      scope: `each fetcher (${facts.fetchers})`,
      limit: limits.logReadBytesMax,
      unit: 'bytes',
      current: null,
      kind: 'anonymous',
    },
    {
      name: 'apply slice',
      flag: 'apply-slice-bytes-max',
      scope: `each fetcher (${facts.fetchers})`,
      limit: limits.applySliceBytesMax,
      unit: 'bytes',
      current: null,
      kind: 'anonymous',
    },
    {
      name: 'top-k terms known',
      flag: 'search-topk-known-terms-max',
      scope: 'apply thread',
      limit: limits.searchTopkKnownTermsMax,
      unit: 'entries',
      current: null,
      kind: 'anonymous',
    },
    {
      name: 'waiting reads',
      flag: 'waiters-max',
      scope: 'each thread',
      limit: limits.waitersMax,
      unit: 'reads',
      current: facts.waiting,
      kind: 'anonymous',
    },
  ];
}
