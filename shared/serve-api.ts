/**
 * A serve-node's contract: the reads a gateway asks of it (each optionally waiting for offsets),
 * its status and admin calls, whichever way it is reached (over HTTP, or bound in-process by
 * `tailbase start`). Implementations: shared/http-serve-client.ts (HTTP) and
 * serve-node/local-serve-client.ts (in-process).
 */

/**
 * For each partition of the collection read (its topic), the offset a read must include: it waits
 * until applied[p] > offset. A read is of one collection, so partition numbers suffice.
 */
export type WaitFor = Readonly<Record<number, number>>;

/**
 * For each partition of the collection a read covered (keyed by the partition number), the next
 * unapplied offset of that partition of the collection's topic.
 */
export type AppliedOffsets = Record<string, number>;

export interface ServeReadOptions {
  waitFor?: WaitFor;
  /**
   * An offset of the settings topic (its one partition) the read waits for too, so a search after
   * a settings change ranks with them (`settings_wait_for` over HTTP). Documents do not depend on
   * settings: a batched key read does not carry it.
   */
  settingsWaitFor?: number;
  /** How long to wait for `waitFor` (and `settingsWaitFor`) before a 504 `not_caught_up`. */
  waitMs?: number;
  signal?: AbortSignal;
}

export interface ServedDocument {
  key: string;
  /**
   * The document's JSON text as stored, passed on unparsed: JSON.parse would round integers past
   * 2^53 and the gateway would answer another number than the one written.
   */
  json: string;
  /** The log offset of the record that wrote this version. */
  offset: number;
  partition: number;
}

export interface GetResult {
  /** Null when the node holds no document under this key (a 404 `document_not_found`). */
  doc: ServedDocument | null;
  applied: AppliedOffsets;
}

/** One key read of a batch: nothing in a batch waits. */
export interface BatchedGet {
  collection: string;
  key: string;
  waitFor: WaitFor;
}

/**
 * `pending`: not answered in the batch (its waitFor is not applied yet, or the node does not take
 * it as it stands); it is asked again alone, where it waits or gets its own error.
 */
export type BatchedGetAnswer = GetResult | 'pending';

/** A serve-node's batched key reads, answered in its own process (the thread port's getMany). */
export interface BatchedGetter {
  getMany(items: readonly BatchedGet[]): BatchedGetAnswer[];
}

export interface ScanOptions extends ServeReadOptions {
  prefix?: string;
  /** Inclusive. */
  start?: string;
  /** Exclusive. */
  end?: string;
  /** Exclusive resume key: the last key of the previous page. */
  after?: string;
  /** With `sort`: the sort values of the `after` key's document, where the page resumes. */
  afterSort?: SortValues;
  limit?: number;
  /** Only these of the node's hosted partitions (default, or empty: all it hosts). */
  partitions?: readonly number[];
  /** A filter (shared/filter/README.md) on the collection's filterable fields. */
  filter?: string;
  /** `field:asc,other:desc` on sortable fields; the scan is then in that order, then by key. */
  sort?: string;
}

/** A document's value for each sort clause, null where it has none. */
export type SortValues = Array<number | string | null>;

/** Whether a parsed cursor or parameter is SortValues (an array of numbers, strings, nulls). */
export function isSortValues(value: unknown): value is SortValues {
  return (
    Array.isArray(value) &&
    value.every((v) => v === null || typeof v === 'number' || typeof v === 'string')
  );
}

/** A scanned document; with `sort`, its sort values, which the gateway merges pages by. */
export interface ScannedDocument extends ServedDocument {
  sort?: SortValues;
}

export interface ScanResult {
  items: ScannedDocument[];
  applied: AppliedOffsets;
  more: boolean;
}

export interface SearchOptions extends ServeReadOptions {
  q: string;
  limit?: number;
  offset?: number;
  highlight?: boolean;
  /** Only these of the node's hosted partitions (default, or empty: all it hosts). */
  partitions?: readonly number[];
  filter?: string;
  sort?: string;
  /** `a,b`: count the values of these filterable fields over every match. */
  facets?: string;
}

export interface SearchHit extends ServedDocument {
  /** Higher is better: the negated FTS5 bm25(). */
  score: number;
  /** With `sort`: the document's sort values. */
  sort?: SortValues;
  /** Field path → the field's text (or a snippet of it) with matches wrapped in <mark></mark>. */
  highlights?: Record<string, string>;
}

export interface SearchResult {
  hits: SearchHit[];
  total: number;
  /** False when `total` is a lower bound (the node counted up to its searchTotalExactMax). */
  totalExact: boolean;
  applied: AppliedOffsets;
  /** With `facets`: each field's values over every match of this node's partitions. */
  facets?: Record<string, NodeFacet>;
}

/** One facet field's counts on one serve-node: every value, unless `truncated`. */
export interface NodeFacet {
  values: Array<{ value: number | string | boolean; count: number }>;
  /** True when the field had more than facetDistinctMax values and only the most frequent came. */
  truncated: boolean;
}

export type PartitionState = 'replaying' | 'tailing' | 'rebuilding' | 'stopped';

/** One topic-partition a serve-node tails: a hosted partition of a collection, or an internal one. */
export interface ServePartitionStatus {
  topic: string;
  partition: number;
  applied: number;
  logEndOffset: number;
  lag: number;
  applyRatePerSec: number;
  etaSeconds: number | null;
  state: PartitionState;
  error?: string;
}

/** The read bounds a serve-node enforces, so a gateway can check its own against them. */
export interface ServeReadLimits {
  scanLimitMax: number;
  searchLimitMax: number;
  searchDepthMax: number;
  waitMsMax: number;
  getBatchKeysMax: number;
}

export interface StoreCheckpoints {
  topic: string;
  partition: number;
  docs: number | null;
  search: number | null;
}

export interface ServeStatus {
  nodeId: string;
  clusterId: string | null;
  /** The partition numbers it hosts, of every collection. */
  hostedPartitions: number[];
  /** Every topic-partition it tails: hosted ones of each collection, and the settings topic's. */
  partitions: ServePartitionStatus[];
  ready: boolean;
  /** Absent from serve-nodes older than stop 10. */
  limits?: ServeReadLimits;
  /** Why the stores were last wiped and replayed, if they were (admin call, log start moved...). */
  lastRebuild?: { reason: string; atMs: number };
  /** Collections being dropped in place, in the order asked (absent from older serve-nodes). */
  dropping?: string[];
  /** The last collection dropped in place, and why (its topic left the log, an admin call). */
  lastDrop?: { collection: string; reason: string; atMs: number };
  /**
   * Set when the node found stores an earlier boot left unflushed (a power loss, a kernel crash)
   * and rolled them back to their last flush instead of rebuilding them: each topic-partition's
   * checkpoint in LMDB (`docs`) and in the search store (`search`) then, from which it replayed.
   */
  lastResume?: { atMs: number; checkpoints: StoreCheckpoints[] };
  /** Collections being re-indexed after a settings change (absent before stop 21). */
  reindexing?: ReindexStatus[];
  /**
   * Collections whose search index is due a merge of its segments (after a bulk load, or a tenth
   * of its documents written), under way or waiting for writes to pause (absent before stop 22).
   */
  segmentMerges?: string[];
  /** Whether top-k list segments are due a merge, as writes left them or once they pause. */
  topkMerges?: boolean;
  /**
   * The search store's free pages the background steps are to give back to the file system
   * once writes pause (0 for a store created without auto_vacuum INCREMENTAL).
   */
  freePages?: number;
  /** Every cache and buffer that holds memory, with its bound (absent from older serve-nodes). */
  memory?: MemoryBound[];
  /**
   * The bounds of an apply transaction (a slice of a log read answer): the time it should take,
   * the bytes and offsets it may hold at most and takes at least whatever the time; and the last
   * slice each fetcher applied (absent from older serve-nodes).
   */
  applySlices?: {
    msMax: number;
    bytesMax: number;
    recordsMax: number;
    bytesMin: number;
    recordsMin: number;
    last: Array<{ records: number; bytes: number; ms: number }>;
  };
}

/**
 * One cache or buffer of a node (a serve-node's, or the gateway's) and what bounds it: the flag
 * that sets the limit, the limit in force (read back from the store where the store keeps it) and
 * the size now where it can be measured. `anonymous` memory is the process's own; `mapped` is the
 * OS page cache of a file, given back under pressure.
 */
export interface MemoryBound {
  name: string;
  /** The node's flag that sets it, without `--`; null: no flag (it follows the store). */
  flag: string | null;
  /** Where one limit applies: `apply thread`, `read thread <id>`, `each thread`, ... */
  scope: string;
  /** In `unit`s; null: unbounded by configuration (it grows with the store's file). */
  limit: number | null;
  unit: 'bytes' | 'entries' | 'reads' | 'feeds';
  /** Null where it cannot be measured from outside the store. */
  current: number | null;
  kind: 'anonymous' | 'mapped';
}

/**
 * A collection whose settings changed, being re-indexed in the background: it answers with its
 * previous settings until `copied` reaches `documents` and the new index takes over at once.
 */
export interface ReindexStatus {
  collection: string;
  /** The settings topic's offset of the first settings record not in effect yet. */
  settingsOffset: number;
  /** Documents indexed with the new settings so far. */
  copied: number;
  /** The collection's documents on this node, counted when the re-index was first reported. */
  documents: number;
}

/**
 * One collection's bytes in a serve-node's stores. LMDB: its share of the documents database's
 * pages, by its documents (the collections share one B-tree). SQLite: its FTS5 tables' pages,
 * and the tables the collections share in proportion to its documents.
 */
export interface CollectionStoreBytes {
  collection: string;
  lmdb: number;
  sqlite: number;
}

export interface SnapshotResult {
  dir: string;
  /** `<topic>/<partition>` → the next unapplied offset the copy holds. */
  applied: Record<string, number>;
}

export interface ServeClient {
  get(collection: string, key: string, options?: ServeReadOptions): Promise<GetResult>;
  scan(collection: string, options?: ScanOptions): Promise<ScanResult>;
  search(collection: string, options: SearchOptions): Promise<SearchResult>;
  /**
   * The documents the node holds of a collection in `partitions` (hosted ones; default, or
   * empty: every one it hosts), as applied now.
   */
  countDocuments(collection: string, partitions?: readonly number[]): Promise<number>;
  /** Every collection the node's stores hold, with its bytes in each (as applied now). */
  storeBytes(): Promise<CollectionStoreBytes[]>;
  status(): Promise<ServeStatus>;
  /** True when /readyz answers 200. */
  ready(): Promise<boolean>;
  rebuild(): Promise<void>;
  /**
   * Drops a collection (or a view's version) from the node's stores in place: its documents,
   * tables and checkpoints. Settles once no read answers from it (its tables and checkpoints
   * gone); its documents are deleted after, in the background (status `dropping`), while a
   * collection the log holds under the name is tailed from its start at once, kept apart from
   * them. `signal` stops the wait, not the drop.
   */
  dropCollection(collection: string, signal?: AbortSignal): Promise<void>;
  snapshot(dir: string): Promise<SnapshotResult>;
}

export function formatWaitFor(waitFor: WaitFor): string {
  return Object.entries(waitFor)
    .map(([partition, offset]) => `${partition}:${offset}`)
    .join(',');
}

/**
 * A serve-node's default waitMsMax, so also this client's bound on the wait of a read that gives
 * wait_for without wait_ms (the node waits its waitMsDefault, never more than its waitMsMax).
 */
export const SERVE_WAIT_MS_MAX = 30_000;

export const GET_BATCH_KEYS_MAX = 128;
