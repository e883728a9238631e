/**
 * A serve-node's configuration: where it keeps its stores, which log it tails, which partitions it
 * hosts, and every limit it enforces (units last in the names).
 */
import { SERVE_WAIT_MS_MAX } from '../shared/serve-api.js';
import { FIELD_PARAM_LIMITS_DEFAULT, type FieldParamLimits } from '../shared/filter-params.js';

export interface ServeNodeLimits extends FieldParamLimits {
  /** The longest a read may wait for `wait_for`; larger `wait_ms` values are clamped to it. */
  waitMsMax: number;
  /** `wait_ms` when a read carries `wait_for` but no `wait_ms`. */
  waitMsDefault: number;
  /** Reads waiting for offsets at once; past it a read gets 503 `too_many_waiters`. */
  waitersMax: number;
  /** `max_bytes` of one log read, a partition. */
  logReadBytesMax: number;
  /**
   * `max_bytes` of a fetcher's first log read, a partition, doubling at each read up to
   * logReadBytesMax, so a replay starts applying as soon as a small answer is in: the first read
   * of a rebuild at the full size (the corpus, 17.9 MB over 8 partitions) kept the serve thread
   * waiting ~150 ms, and later reads are fetched while the last answer is applied.
   */
  logReadBytesMin: number;
  /**
   * How long one apply transaction (a slice of a read answer, both stores) should hold the serve
   * thread: a read answer is applied in slices (apply-slices.ts), the event loop running between
   * them, so waiting reads' timers and reads are not held behind it; each slice takes what the
   * last ones' cost says fits this long (apply-slice-budget.ts). Applied whole, 4 MiB answers of
   * 4 KB texts held the thread 1.6 to 3.5 s during a bulk load on a loaded 2-core machine.
   */
  applySliceMsMax: number;
  /** Offsets of one apply transaction at most, whatever the time allows: records decoded at once. */
  applySliceRecordsMax: number;
  /** Record bytes of one apply transaction at most (about), whatever the time allows. */
  applySliceBytesMax: number;
  /**
   * A slice takes this many offsets, or `applySliceBytesMin` bytes, whichever comes first, even
   * past the time bound: a transaction has a cost of its own, which smaller ones only multiply.
   */
  applySliceRecordsMin: number;
  /** See applySliceRecordsMin. */
  applySliceBytesMin: number;
  /** The log-node's long-poll wait when every partition of a fetcher is caught up. */
  logWaitMs: number;
  /**
   * A fetcher that has caught up with the log, with no read waiting on its partitions, waits this
   * long before its next log read, so writes arriving meanwhile are applied as one group. Reads
   * without a token may see writes this much later; a read that waits for offsets ends the pause.
   */
  applyLingerMs: number;
  /** The pause above applies only once no read has waited on the fetcher's partitions this long. */
  applyLingerIdleMs: number;
  /** The longest pause between retries after a log error. */
  retryMsMax: number;
  /**
   * How often the log's topics are listed to find new collections (a read naming a collection
   * not tailed yet also looks at once).
   */
  topicRefreshMs: number;
  scanLimitDefault: number;
  scanLimitMax: number;
  /**
   * Document bytes of one scan page: past them the page ends early (`more`), so a page of large
   * documents stays far below V8's ~512 MB string bound (1000 documents of 1 MiB answered 500).
   */
  scanBytesMax: number;
  searchLimitDefault: number;
  searchLimitMax: number;
  /** limit + offset of a search; deep pages cost every partition's top-(offset+limit). */
  searchDepthMax: number;
  /**
   * Matches a search counts for `total`; past it `total` is a lower bound (`totalExact: false`),
   * so a query of a common term does not pay for counting every document it matches.
   */
  searchTotalExactMax: number;
  /**
   * Rows a term must be in for the search store to keep its top-k list (topk-index.ts): a search
   * of one such word reads about its first page of postings, not every match. A store made with
   * another value builds its lists again on opening.
   */
  searchTopkListedDfMin: number;
  /**
   * Terms of the search store whose document frequency the apply thread keeps in memory between
   * writes (topk-index.ts: the unlisted terms' are FTS5's, read as a term is first written); past
   * it they are all forgotten and read again. About 100 bytes a term.
   */
  searchTopkKnownTermsMax: number;
  /**
   * Segments of one tier of a term's top-k list (topk-segments.ts: their postings within a power
   * of this) that are merged into one: a posting is rewritten once a tier, and a search merges
   * one run a segment and frequency, fewer than this many segments a tier.
   */
  searchTopkMergeSegments: number;
  /**
   * FTS5's `automerge` of every table the apply thread writes: segments of one level that start
   * an incremental merge of them. Every apply transaction leaves a segment, and each merge rewrites
   * what it merges, so a document is rewritten about once a level (the levels, log base this,
   * halve from 4 to 16): with FTS5's default 4 a 10^5 replay's apply thread took 11% more CPU
   * than with 8 (bench/README.md). More segments a level cost a search during a load more seeks
   * (segment-merges.ts leaves one once writes pause).
   */
  ftsAutomergeSegments: number;
  queryBytesMax: number;
  queryTermsMax: number;
  /** /readyz answers 200 when every hosted partition lags the log end by at most this many offsets. */
  readyLagMax: number;
  /** Keys of one batched document read (`POST /internal/docs`). */
  getBatchKeysMax: number;
  /** Body bytes of one batched document read. */
  getBatchBytesMax: number;
  /**
   * Distinct values of one facet field a search answers; past it the most frequent are kept and
   * the facet says it is truncated, so a facet over unique ids cannot make an answer unbounded.
   */
  facetDistinctMax: number;
  /**
   * Entries (a document's value of a field) of facet values held in memory between writes, over
   * every table and field (about 8 bytes each): fields with more are counted in SQL instead.
   */
  facetValuesHeldMax: number;
  /**
   * Documents one step of a re-index after a settings change copies, in one transaction: reads
   * and applied answers wait at most one step.
   */
  reindexStepDocsMax: number;
  /**
   * A step also ends after the document that takes it past this long (it copies at least one):
   * 500 documents of 5 KB took a step of ~300 ms, a read's p99 while it ran.
   */
  reindexStepMsMax: number;
  /**
   * Documents a dropped collection loses from LMDB in one transaction (collection-drops.ts):
   * applied answers and reads of other collections wait at most one step.
   */
  dropStepDocsMax: number;
  /**
   * No document written for this long before a table's FTS5 segments are merged into one
   * (segment-merges.ts): a bulk load is merged once, when it ends.
   */
  mergeQuietMs: number;
  /**
   * A table's segments are merged once the documents written to it since its last merge reach
   * this percentage of its documents then: a merge rewrites the whole index.
   */
  mergeWrittenPercent: number;
  /** A merge step (one transaction) ends past this long. */
  mergeStepMsMax: number;
  /**
   * How often the stores are made durable (fsynced) when they have changed: a power loss takes
   * back at most the writes of this long, which the node replays from the log when it starts.
   */
  storeFlushMs: number;
  /**
   * SQLite's page cache of each connection to the search store (the apply thread's and each read
   * thread's), anonymous memory: PRAGMA cache_size. SQLite's own default, 2000 KiB.
   */
  sqliteCacheBytesMax: number;
  /**
   * The search store mapped into memory by each connection (PRAGMA mmap_size): page cache of the
   * OS, not the process's own. 0, SQLite's default: reads go through the page cache above.
   */
  sqliteMmapBytesMax: number;
  /**
   * The length the search store's WAL file is cut back to when it starts over after a
   * checkpoint (PRAGMA journal_size_limit): bytes on disk at rest, against growing the file
   * again at the next run of commits.
   */
  sqliteWalBytesKeptMax: number;
  /**
   * The share of a thread's time measuring bytes on disk (GET /v1/collections) may take: a
   * measurement reads every page of the search store, so it is answered again from the last one
   * until 100 / this times what that one took has passed (duty-bound.ts).
   */
  storeBytesDutyPercentMax: number;
}

export interface ServeNodeConfig {
  dataDir: string;
  host?: string;
  port?: number;
  logUrls: string[];
  /** Hosted partitions; default: every partition of the log. */
  partitions?: number[];
  /** A snapshot directory to seed an empty data dir from (see README.md). */
  fromSnapshot?: string;
  limits?: Partial<ServeNodeLimits>;
}

export const DEFAULT_LIMITS: ServeNodeLimits = {
  waitMsMax: SERVE_WAIT_MS_MAX,
  waitMsDefault: 5_000,
  waitersMax: 1_000,
  logReadBytesMax: 4 * 1024 * 1024,
  logReadBytesMin: 64 * 1024,
  applySliceMsMax: 100,
  applySliceRecordsMax: 20_000,
  applySliceBytesMax: 8 * 1024 * 1024,
  applySliceRecordsMin: 1_000,
  applySliceBytesMin: 512 * 1024,
  logWaitMs: 2_000,
  applyLingerMs: 20,
  applyLingerIdleMs: 1_000,
  retryMsMax: 5_000,
  topicRefreshMs: 1_000,
  scanLimitDefault: 100,
  scanLimitMax: 1_000,
  scanBytesMax: 16 * 1024 * 1024,
  searchLimitDefault: 10,
  searchLimitMax: 100,
  searchDepthMax: 1_000,
  searchTotalExactMax: 10_000,
  searchTopkListedDfMin: 1_000,
  searchTopkKnownTermsMax: 1_000_000,
  searchTopkMergeSegments: 8,
  ftsAutomergeSegments: 8,
  queryBytesMax: 1_024,
  queryTermsMax: 32,
  readyLagMax: 1_000,
  getBatchKeysMax: 1_000,
  getBatchBytesMax: 2 * 1024 * 1024,
  facetDistinctMax: 10_000,
  facetValuesHeldMax: 2_000_000,
  reindexStepDocsMax: 500,
  reindexStepMsMax: 10,
  dropStepDocsMax: 1_000,
  mergeQuietMs: 1_000,
  mergeWrittenPercent: 10,
  mergeStepMsMax: 10,
  storeFlushMs: 1_000,
  sqliteCacheBytesMax: 2_000 * 1024,
  sqliteMmapBytesMax: 0,
  sqliteWalBytesKeptMax: 4 * 1024 * 1024,
  storeBytesDutyPercentMax: 10,
  ...FIELD_PARAM_LIMITS_DEFAULT,
};

export const DEFAULT_HOST = '127.0.0.1';

/** What a connection to the search store is opened with, of the node's limits. */
export function searchStoreOptions(limits: ServeNodeLimits): {
  topkListedDfMin: number;
  topkKnownTermsMax: number;
  topkMergeSegmentsMin: number;
  automergeSegments: number;
  cacheBytesMax: number;
  mmapBytesMax: number;
  walBytesKeptMax: number;
} {
  return {
    topkListedDfMin: limits.searchTopkListedDfMin,
    topkKnownTermsMax: limits.searchTopkKnownTermsMax,
    topkMergeSegmentsMin: limits.searchTopkMergeSegments,
    automergeSegments: limits.ftsAutomergeSegments,
    cacheBytesMax: limits.sqliteCacheBytesMax,
    mmapBytesMax: limits.sqliteMmapBytesMax,
    walBytesKeptMax: limits.sqliteWalBytesKeptMax,
  };
}
