/** Parsing and bounding the query parameters of the read routes: bad input is a 400, never a 500. */
import { KEY_BYTES_MAX } from '../shared/batch-codec.js';
import { isSortValues, type SortValues } from '../shared/serve-api.js';
import { badRequest } from '../shared/errors.js';
import { checkCollection } from '../shared/collection-name.js';
import { partitionOffsetList } from '../shared/query-params.js';
import type { OffsetNeed } from './offset-waiters.js';
import type { BatchGetItem } from './reads.js';

export function checkKey(key: string): string {
  const bytes = Buffer.byteLength(key);
  if (bytes === 0 || bytes > KEY_BYTES_MAX) {
    throw badRequest('invalid_key', `a key is 1..${KEY_BYTES_MAX} bytes of UTF-8`);
  }
  return key;
}

/** `wait_for=P:O,P:O` → needs; every partition must be hosted here. */
export function parseWaitFor(raw: string | undefined, hosted: ReadonlySet<number>): OffsetNeed[] {
  if (raw === undefined || raw === '') return [];
  return partitionOffsetList(raw, 'wait_for', hosted.size, 'invalid_wait_for').map((need) => ({
    partition: checkHosted(need.partition, hosted),
    offset: need.offset,
  }));
}

/** `{"items": [{"collection", "key", "waitFor"?: {"P": O}}]}`: 1..keysMax items, each checked. */
export function parseBatchGet(
  body: Buffer,
  hosted: ReadonlySet<number>,
  keysMax: number,
): BatchGetItem[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    throw badRequest('invalid_json', 'the body is not JSON');
  }
  const items = (parsed as { items?: unknown } | null)?.items;
  if (!Array.isArray(items) || items.length === 0 || items.length > keysMax) {
    throw badRequest('invalid_items', `items is an array of 1..${keysMax} reads`, {
      limit: 'getBatchKeysMax',
      max: keysMax,
    });
  }
  return items.map((item: unknown) => {
    const { collection, key, waitFor } = (item ?? {}) as Record<string, unknown>;
    if (typeof collection !== 'string' || typeof key !== 'string') {
      throw badRequest('invalid_items', 'each item has a string collection and key');
    }
    return {
      collection: checkCollection(collection),
      key: checkKey(key),
      needs: needsOf(waitFor, hosted),
    };
  });
}

/** `{"P": O}` (a batched read's waitFor, or an in-process read's): each of a hosted partition. */
export function needsOf(raw: unknown, hosted: ReadonlySet<number>): OffsetNeed[] {
  if (raw === undefined) return [];
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw badRequest('invalid_wait_for', 'waitFor is an object of partition → offset');
  }
  return Object.entries(raw).map(([partition, offset]) => {
    if (!/^\d{1,9}$/.test(partition) || !Number.isSafeInteger(offset) || (offset as number) < 0) {
      throw badRequest('invalid_wait_for', 'waitFor is an object of partition → offset');
    }
    return { partition: checkHosted(Number(partition), hosted), offset: offset as number };
  });
}

/** `settings_wait_for=O` (or an in-process read's settingsWaitFor): an offset, else 400. */
export function parseSettingsWaitFor(raw: string | number | undefined): number | undefined {
  if (raw === undefined || raw === '') return undefined;
  const offset = typeof raw === 'number' ? raw : /^\d{1,16}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(offset) || offset < 0) {
    throw badRequest('invalid_settings_wait_for', 'settings_wait_for is an offset');
  }
  return offset;
}

export function optionalString(name: string, raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  if (Buffer.byteLength(raw) > KEY_BYTES_MAX) {
    throw badRequest(`invalid_${name}`, `${name} is at most ${KEY_BYTES_MAX} bytes`);
  }
  return raw;
}

/** `partitions=0,3`: a subset of the hosted partitions a scan or search covers (default: all). */
export function parsePartitions(
  raw: string | undefined,
  hosted: ReadonlySet<number>,
): number[] | undefined {
  if (raw === undefined || raw === '') return undefined;
  const parts = raw.split(',');
  if (parts.length > hosted.size || !parts.every((part) => /^\d{1,9}$/.test(part))) {
    throw badRequest(
      'invalid_partitions',
      'partitions is a comma-separated list of hosted partitions',
    );
  }
  return [...new Set(parts.map((part) => checkHosted(Number(part), hosted)))].sort((a, b) => a - b);
}

/** An in-process read's partitions: each hosted here (the same 400 as the `partitions` parameter). */
export function checkHostedPartitions(
  partitions: readonly number[] | undefined,
  hosted: ReadonlySet<number>,
): number[] | undefined {
  return partitions?.map((partition) => checkHosted(partition, hosted));
}

function checkHosted(partition: number, hosted: ReadonlySet<number>): number {
  if (!hosted.has(partition)) {
    throw badRequest('partition_not_hosted', `partition ${partition} is not hosted by this node`, {
      partition,
      hosted: [...hosted],
    });
  }
  return partition;
}

/** Sort clauses a scan's `after_sort` may carry: more than any sort the parser accepts. */
const SORT_VALUES_MAX = 64;

/**
 * `after_sort`: the JSON array of the resume position's sort values (numbers, strings, nulls),
 * as a gateway sends it; anything else is a 400.
 */
export function parseSortValues(raw: string | undefined): SortValues | undefined {
  if (raw === undefined) return undefined;
  const invalid = () =>
    badRequest('invalid_after_sort', 'after_sort is a JSON array of numbers, strings and nulls');
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw invalid();
  }
  if (!isSortValues(parsed) || parsed.length > SORT_VALUES_MAX) throw invalid();
  return parsed;
}
