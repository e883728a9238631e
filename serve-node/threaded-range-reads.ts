/**
 * Scans and searches of the serve-node's HTTP routes sent to its read threads: the requests the
 * routes parsed, as the serve contract carries them (the read thread checks them again).
 */
import type { ServeClient, WaitFor } from '../shared/serve-api.js';
import type { ReadWait, ScanRequest, SearchRequest } from './reads.js';
import type { RangeReads } from './routes.js';

export function rangeReadsOn(readers: Pick<ServeClient, 'scan' | 'search'>): RangeReads {
  return {
    scan: (collection: string, request: ScanRequest) => {
      const { range, afterSort, filter, sort, limit, partitions } = request;
      return readers.scan(collection, {
        ...range,
        afterSort,
        filter,
        sort,
        limit,
        partitions,
        ...waitOptions(request),
      });
    },
    search: (collection: string, request: SearchRequest) => {
      const { q, filter, sort, facets, limit, offset, highlight, partitions } = request;
      return readers.search(collection, {
        q: q ?? '',
        filter,
        sort,
        facets,
        limit,
        offset,
        highlight,
        partitions,
        ...waitOptions(request),
      });
    },
  };
}

function waitOptions(wait: ReadWait) {
  const waitFor: Record<number, number> = {};
  for (const { partition, offset } of wait.needs) waitFor[partition] = offset;
  return {
    waitFor: waitFor as WaitFor,
    settingsWaitFor: wait.settingsNeed,
    waitMs: wait.waitMs,
    signal: wait.signal,
  };
}
