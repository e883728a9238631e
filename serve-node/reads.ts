/**
 * The serve-node's reads, apart from any transport: key reads, key-ordered scans and ranked
 * search over the current stores, each first waiting until the offsets it needs are applied. The
 * HTTP routes (routes.ts) and the in-process client (local-serve-client.ts) both call these, so a
 * read checks the same bounds and answers the same way whichever way it arrived.
 */
import Database from 'better-sqlite3';
import { badRequest } from '../shared/errors.js';
import { checkInteger } from '../shared/query-params.js';
import type { AppliedOffsets, SearchHit, SearchResult } from '../shared/serve-api.js';
import type { ServeNodeLimits } from './config.js';
import type { DocStore, KeyRange, StoredDoc } from './doc-store.js';
import { parseQuery } from './fts-query.js';
import { SETTINGS_TOPIC } from '../shared/topics.js';
import type { OffsetNeed, OffsetWaiters, TopicNeed } from './offset-waiters.js';
import type { SearchStore } from './search-store.js';

/** The stores a read looks in: the current generation's. */
export interface ReadStores {
  docs: Pick<DocStore, 'get' | 'scan'>;
  search: Pick<SearchStore, 'search' | 'highlights'>;
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
   * An offset of the settings topic's partition to wait for too: a search after a settings change
   * is then ranked with the new settings.
   */
  settingsNeed?: number;
  /** Absent: the node's waitMsDefault; longer than waitMsMax: clamped to it, not refused. */
  waitMs?: number;
  signal?: AbortSignal;
}

export interface ScanRequest extends ReadWait {
  range: KeyRange;
  limit?: number;
  /** Only these hosted partitions (default: all). */
  partitions?: readonly number[];
}

export interface SearchRequest extends ReadWait {
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

  constructor(private readonly core: ReadCore) {
    this.hostedSet = new Set(core.hosted);
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
  ): Promise<{ items: StoredDoc[]; more: boolean; applied: AppliedOffsets }> {
    const { limits } = this.core;
    const limit = checkInteger(
      request.limit,
      'limit',
      1,
      limits.scanLimitMax,
      limits.scanLimitDefault,
    );
    await this.waitFor(collection, request);
    const partitions = request.partitions?.length ? new Set(request.partitions) : this.hostedSet;
    const { items, more } = this.core
      .replica()
      .docs.scan(collection, request.range, limit, partitions, limits.scanBytesMax);
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
    await this.waitFor(collection, request);
    const stores = this.core.replica();
    let found;
    try {
      found = stores.search.search(
        collection,
        partitions,
        query,
        offset + limit,
        limits.searchTotalExactMax,
      );
    } catch (error) {
      // The parser emits only quoted strings, so this is a tokenizer corner case, not a bug to hide.
      if (error instanceof Database.SqliteError) {
        throw badRequest('invalid_query', `the query cannot be searched: ${error.message}`);
      }
      throw error;
    }
    const hits: SearchHit[] = found.matches.slice(offset, offset + limit).flatMap((match) => {
      const doc = stores.docs.get(collection, match.key);
      return doc === undefined ? [] : [{ ...doc, score: match.score }];
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
    };
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
      });
    }
    if (needs.length > 0) {
      await this.core.waiters.wait(needs, Math.min(asked, limits.waitMsMax), wait.signal);
    }
  }
}
