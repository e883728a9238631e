/**
 * The typed client's view of the API's shapes (gateway/api/shapes.ts, imported as types only):
 * the same bodies, with documents typed by the caller's `Doc`.
 */
import type {
  BulkItem as ApiBulkItem,
  Consistency,
  ScanQuery,
  SearchAnswer,
  SearchHit as ApiSearchHit,
  StoredDocument,
  WriteWait,
} from '../../gateway/api/index.js';

export type JsonValue =
  null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

export type Document<Doc> = Omit<StoredDocument, 'value'> & { value: Doc };
export interface ScanPage<Doc> {
  items: Document<Doc>[];
  /** Pass it back as `cursor` for the next page; null once the range is exhausted. */
  cursor: string | null;
}
export type SearchHit<Doc> = Omit<ApiSearchHit, 'value'> & { value: Doc };
export type SearchResult<Doc> = Omit<SearchAnswer, 'hits'> & { hits: SearchHit<Doc>[] };
export type BulkItem<Doc> = Omit<ApiBulkItem, 'value'> & { value: Doc | null };

/** Per call: how fresh a read must be (DESIGN.md, consistency=) and how long it may wait. */
export interface ReadOptions {
  consistency?: Consistency;
  /** The longest the gateway waits for the token to be applied (wait_ms). */
  waitMs?: number;
  signal?: AbortSignal;
}

export interface CallOptions {
  signal?: AbortSignal;
}

/** A write's options: `wait: 'applied'` answers once every hosting serve-node has applied it. */
export interface WriteOptions extends CallOptions {
  wait?: WriteWait;
  /** The longest the gateway waits for the apply (wait_ms); a 504 `not_caught_up` past it. */
  waitMs?: number;
}

/** `field:asc,other:desc`, or its parts. */
export type SortOption = string | readonly string[];

export interface ScanOptions
  extends ReadOptions, Pick<ScanQuery, 'prefix' | 'start' | 'end' | 'limit' | 'cursor' | 'filter'> {
  sort?: SortOption;
}

export interface SearchOptions extends ReadOptions {
  limit?: number;
  offset?: number;
  highlight?: boolean;
  filter?: string;
  sort?: SortOption;
  /** Fields to count values of over all matches (`facets=a,b`). */
  facets?: string | readonly string[];
}

/** Bounds the pages an iterator follows, so a loop over a huge range ends. */
export interface PagesOptions {
  pagesMax?: number;
}

export interface BulkOptions extends WriteOptions {
  /** Records a request. */
  chunkRecords?: number;
  /** The largest request body, in bytes of NDJSON. */
  chunkBytes?: number;
  onProgress?: (progress: BulkProgress) => void;
}

export interface BulkProgress {
  /** Records written so far. */
  records: number;
  requests: number;
  /** The session token after the last request. */
  token: string;
}

export type BulkResult = BulkProgress;
