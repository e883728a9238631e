/**
 * The serve-node's reads, apart from any transport: key reads, key-ordered scans and ranked
 * search over the current stores, each first waiting until the offsets it needs are applied. The
 * HTTP routes (routes.ts) and the in-process client (local-serve-client.ts) both call these, so a
 * read checks the same bounds and answers the same way whichever way it arrived.
 */
import Database from 'better-sqlite3';
import { badRequest } from '../shared/errors.js';
import { checkInteger } from '../shared/query-params.js';
import { compareFacetValues } from '../shared/facet-order.js';
import { matches } from '../shared/filter/evaluate.js';
import type {
  AppliedOffsets,
  CollectionStoreBytes,
  NodeFacet,
  ScannedDocument,
  SearchHit,
  SearchResult,
  SortValues,
} from '../shared/serve-api.js';
import type { ServeNodeLimits } from './config.js';
import type { DocStore, KeyRange, StoredDoc } from './doc-store.js';
import {
  checkFieldParams,
  parseFieldParams,
  type FieldParams,
  type ParsedFieldParams,
} from './field-params.js';
import { DutyBoundMeasure } from './duty-bound.js';
import { parseQuery } from './fts-query.js';
import { SETTINGS_TOPIC } from '../shared/topics.js';
import type { OffsetNeed, OffsetWaiters, TopicNeed } from './offset-waiters.js';
import type { FacetCount } from './search-reads.js';
import type { SearchStore } from './search-store.js';

/** The stores a read looks in: the current generation's. */
export interface ReadStores {
  docs: Pick<DocStore, 'get' | 'scan' | 'countDocuments' | 'collectionBytes'>;
  search: Pick<
    SearchStore,
    | 'search'
    | 'highlights'
    | 'facets'
    | 'scanKeys'
    | 'settingsOf'
    | 'collectionBytes'
    | 'followWriter'
  >;
}

/** What reads need of the node. */
export interface ReadCore {
  hosted: readonly number[];
  limits: ServeNodeLimits;
  waiters: OffsetWaiters;
  replica(): ReadStores;
  /** The collection's applied offsets, per hosted partition of its topic. */
  applied(collection: string): AppliedOffsets;
  /** Whether the collection's topic is tailed; when not, the node looks for it in the log now. */
  tails(collection: string): boolean;
}

/**
 * How long a read waits for its offsets, and which it waits for (each of a hosted partition of
 * the collection read).
 */
export interface ReadWait {
  needs: readonly OffsetNeed[];
  /**
   * An offset of the settings topic's partition to wait for too, applied and its re-index done: a
   * read after a settings change is then served with the new settings.
   */
  settingsNeed?: number;
  /** Absent: the node's waitMsDefault; longer than waitMsMax: clamped to it, not refused. */
  waitMs?: number;
  signal?: AbortSignal;
}

export interface ScanRequest extends ReadWait, Omit<FieldParams, 'facets'> {
  range: KeyRange;
  /** With `sort`: the sort values of `range.after`'s document. */
  afterSort?: SortValues;
  limit?: number;
  /** Only these hosted partitions (default: all). */
  partitions?: readonly number[];
}

export interface SearchRequest extends ReadWait, FieldParams {
  q: string | undefined;
  limit?: number;
  offset?: number;
  highlight: boolean;
  /** Only these hosted partitions (default: all). */
  partitions?: readonly number[];
}

/** One item of a batched key read: nothing waits; an item not yet applied answers `false`. */
export interface BatchGetItem {
  collection: string;
  key: string;
  needs: readonly OffsetNeed[];
}

/** The settings topic's one partition. */
const SETTINGS_PARTITION = 0;

export class ServeReads {
  private readonly hostedSet: ReadonlySet<number>;

  /** Keyed by the stores measured: a new generation is measured at once. */
  private readonly storeBytesMeasure: DutyBoundMeasure<ReadStores, CollectionStoreBytes[]>;

  constructor(private readonly core: ReadCore) {
    this.hostedSet = new Set(core.hosted);
    this.storeBytesMeasure = new DutyBoundMeasure(core.limits.storeBytesDutyPercentMax);
  }

  async get(
    collection: string,
    key: string,
    wait: ReadWait,
  ): Promise<{ doc: StoredDoc | undefined; applied: AppliedOffsets }> {
    await this.waitFor(collection, wait);
    const doc = this.core.replica().docs.get(collection, key);
    return { doc, applied: this.core.applied(collection) };
  }

  /** The collection's documents in `partitions` (every hosted one when absent or empty). */
  countDocuments(collection: string, partitions: readonly number[] | undefined): number {
    const only = partitions === undefined || partitions.length === 0 ? null : new Set(partitions);
    const all = only === null || this.core.hosted.every((p) => only.has(p));
    return this.core.replica().docs.countDocuments(collection, all ? null : only);
  }

  /**
   * Each collection's bytes in the current stores, LMDB's and SQLite's, measured again at most as
   * often as storeBytesDutyPercentMax allows (duty-bound.ts).
   */
  storeBytes(): CollectionStoreBytes[] {
    const stores = this.core.replica();
    return this.storeBytesMeasure.get(stores, () => measureStoreBytes(stores));
  }

  /** Answers each item, and the applied offsets of each collection the items name. */
  getMany(items: readonly BatchGetItem[]): {
    answers: Array<StoredDoc | null | false>;
    applied: Record<string, AppliedOffsets>;
  } {
    const applied: Record<string, AppliedOffsets> = {};
    const docs = this.core.replica().docs;
    const answers = items.map(({ collection, key, needs }) => {
      const ofCollection = (applied[collection] ??= this.core.applied(collection));
      if (needs.some((need) => ofCollection[need.partition] <= need.offset)) {
        this.core.tails(collection);
        return false;
      }
      return docs.get(collection, key) ?? null;
    });
    return { answers, applied };
  }

  async scan(
    collection: string,
    request: ScanRequest,
  ): Promise<{ items: ScannedDocument[]; more: boolean; applied: AppliedOffsets }> {
    const { limits } = this.core;
    const limit = checkInteger(
      request.limit,
      'limit',
      1,
      limits.scanLimitMax,
      limits.scanLimitDefault,
    );
    const fields = parseFieldParams(request, limits);
    await this.waitFor(collection, request);
    const partitions = request.partitions?.length ? new Set(request.partitions) : this.hostedSet;
    const stores = this.core.replica();
    if (fields.filter === null && fields.sort.length === 0) {
      const { items, more } = stores.docs.scan(
        collection,
        request.range,
        limit,
        partitions,
        limits.scanBytesMax,
      );
      return { items, more, applied: this.core.applied(collection) };
    }
    const { items, more } = againIfTableDropped(stores, () => {
      checkFieldParams(fields, stores.search.settingsOf(collection));
      return this.indexedScan(stores, collection, request, fields, limit, partitions);
    });
    return { items, more, applied: this.core.applied(collection) };
  }

  async search(collection: string, request: SearchRequest): Promise<SearchResult> {
    const { limits } = this.core;
    if (request.q === undefined || request.q.trim() === '') {
      throw badRequest('invalid_query', 'q is required');
    }
    const query = parseQuery(request.q, limits);
    const limit = checkInteger(
      request.limit,
      'limit',
      1,
      limits.searchLimitMax,
      limits.searchLimitDefault,
    );
    const offset = checkInteger(request.offset, 'offset', 0, limits.searchDepthMax - limit, 0);
    const partitions = request.partitions?.length ? request.partitions : this.core.hosted;
    const fields = parseFieldParams(request, limits);
    await this.waitFor(collection, request);
    const stores = this.core.replica();
    let answer;
    try {
      answer = againIfTableDropped(stores, () => {
        checkFieldParams(fields, stores.search.settingsOf(collection));
        const matched = stores.search.search(
          collection,
          partitions,
          query,
          offset + limit,
          limits.searchTotalExactMax,
          fields,
        );
        if (fields.facets.length === 0) return { found: matched, facets: undefined };
        const counts = stores.search.facets(
          collection,
          partitions,
          query,
          fields.filter,
          fields.facets,
          { count: matched.total, exact: matched.totalExact },
          limits.facetValuesHeldMax,
        );
        return { found: matched, facets: boundFacets(counts, limits.facetDistinctMax) };
      });
    } catch (error) {
      // The parser emits only quoted strings, so this is a tokenizer corner case, not a bug to hide.
      if (error instanceof Database.SqliteError) {
        throw badRequest('invalid_query', `the query cannot be searched: ${error.message}`);
      }
      throw error;
    }
    const { found, facets } = answer;
    const hits: SearchHit[] = found.matches.slice(offset, offset + limit).flatMap((match) => {
      const doc = stores.docs.get(collection, match.key);
      if (doc === undefined) return [];
      return [{ ...doc, score: match.score, ...(match.sort ? { sort: match.sort } : {}) }];
    });
    // Highlights only for the page answered, tokenized as the collection's table tokenizes.
    if (request.highlight) {
      const marked = stores.search.highlights(
        collection,
        hits.map((hit) => ({ doc: JSON.parse(hit.json) as unknown })),
        query,
      );
      hits.forEach((hit, i) => (hit.highlights = marked[i] ?? {}));
    }
    return {
      hits,
      total: found.total,
      totalExact: found.totalExact,
      applied: this.core.applied(collection),
      ...(facets ? { facets } : {}),
    };
  }

  /**
   * A filtered or sorted scan: the field indexes give the keys in order, LMDB the documents. The
   * search store is applied before LMDB, so a document read here can be older than the version
   * its key was found by: it is checked against the filter again and left out if it no longer
   * matches, and the next keys are read until the page is full or the scan is done.
   */
  private indexedScan(
    stores: ReadStores,
    collection: string,
    request: ScanRequest,
    fields: ParsedFieldParams,
    limit: number,
    partitions: ReadonlySet<number>,
  ): { items: ScannedDocument[]; more: boolean } {
    const { range } = request;
    const items: ScannedDocument[] = [];
    let bytes = 0;
    let after =
      range.after === undefined ? undefined : { key: range.after, sort: request.afterSort ?? [] };
    for (;;) {
      const keys = stores.search.scanKeys(collection, {
        partitions: [...partitions],
        start: range.start,
        end: range.end,
        prefix: range.prefix,
        filter: fields.filter,
        sort: fields.sort,
        after,
        limit: limit - items.length + 1,
      });
      const more = keys.length > limit - items.length;
      for (const found of keys.slice(0, limit - items.length)) {
        after = { key: found.key, sort: found.sort };
        const doc = stores.docs.get(collection, found.key);
        if (doc === undefined) continue;
        if (fields.filter !== null && !matches(fields.filter, JSON.parse(doc.json))) continue;
        // At least one document a page, however large, so a scan always moves on.
        if (items.length > 0 && bytes + doc.json.length > this.core.limits.scanBytesMax) {
          return { items, more: true };
        }
        bytes += doc.json.length;
        items.push(fields.sort.length > 0 ? { ...doc, sort: found.sort } : doc);
      }
      if (!more || items.length === limit) return { items, more };
    }
  }

  /**
   * Waits until the read's offsets of the collection's topic are applied, for at most its
   * (clamped) wait. A collection not tailed yet is looked for in the log at once.
   */
  private async waitFor(collection: string, wait: ReadWait): Promise<void> {
    const { limits } = this.core;
    const asked = checkInteger(
      wait.waitMs,
      'wait_ms',
      0,
      Number.MAX_SAFE_INTEGER,
      limits.waitMsDefault,
    );
    this.core.tails(collection);
    const needs: TopicNeed[] = wait.needs.map((need) => ({ topic: collection, ...need }));
    if (wait.settingsNeed !== undefined) {
      needs.push({
        topic: SETTINGS_TOPIC,
        partition: SETTINGS_PARTITION,
        offset: wait.settingsNeed,
        collection,
      });
    }
    if (needs.length > 0) {
      await this.core.waiters.wait(needs, Math.min(asked, limits.waitMsMax), wait.signal);
    }
  }
}

/**
 * Runs a read of the search store once more when its first ran into a table that is gone: on a
 * read thread, a commit of the apply thread (a collection's drop, a re-index's swap) can drop a
 * table its caches still name between the moment they followed the writer and the read.
 */
function againIfTableDropped<T>(stores: ReadStores, read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (!(error instanceof Database.SqliteError) || !error.message.startsWith('no such table')) {
      throw error;
    }
    stores.search.followWriter();
    return read();
  }
}

/**
 * Each facet's counts, most frequent first (ties by value), cut at `distinctMax` values: the
 * gateway adds nodes' counts value by value, so a node answers all it can.
 */
function boundFacets(
  counts: Map<string, FacetCount[]>,
  distinctMax: number,
): Record<string, NodeFacet> {
  const facets: Record<string, NodeFacet> = {};
  for (const [field, values] of counts) {
    values.sort((a, b) => b.count - a.count || compareFacetValues(a.value, b.value));
    facets[field] = {
      values: values.slice(0, distinctMax),
      truncated: values.length > distinctMax,
    };
  }
  return facets;
}

function measureStoreBytes({ docs, search }: ReadStores): CollectionStoreBytes[] {
  const lmdb = docs.collectionBytes();
  const sqlite = search.collectionBytes();
  return [...new Set([...lmdb.keys(), ...sqlite.keys()])].sort().map((collection) => ({
    collection,
    lmdb: lmdb.get(collection) ?? 0,
    sqlite: sqlite.get(collection) ?? 0,
  }));
}
