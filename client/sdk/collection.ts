/**
 * One collection through the typed client: writes, key reads, scans and searches (one page, or
 * an async iterator over pages), bulk loads with progress, settings and its change feed. Every
 * call goes through the session's Transport, so it carries and keeps the session's token.
 */
import type {
  BulkAnswer,
  DropAnswer,
  SettingsAnswer,
  SettingsBody,
  SettingsPatch,
  SettingsView,
  WriteAnswer,
} from '../../gateway/api/index.js';
import { TailbaseError } from '../../shared/errors.js';
import { followChanges, type ChangesOptions } from './change-feed.js';
import type { Transport } from './transport.js';
import type {
  BulkItem,
  BulkOptions,
  BulkResult,
  Document,
  JsonValue,
  PagesOptions,
  ReadOptions,
  ScanOptions,
  ScanPage,
  SearchOptions,
  SearchResult,
  SortOption,
  CallOptions,
  WriteOptions,
} from './types.js';

/** Half the gateway's default bulkBytesMax (16 MiB) and a tenth of its bulkRecordsMax. */
export const BULK_CHUNK_BYTES_DEFAULT = 8 * 1024 * 1024;
export const BULK_CHUNK_RECORDS_DEFAULT = 1000;
/** Pages an iterator follows unless told otherwise. */
export const PAGES_MAX_DEFAULT = 10_000;

const segment = (text: string) => encodeURIComponent(text);
const utf8 = new TextEncoder();

const readQuery = (options: ReadOptions) => ({
  consistency: options.consistency,
  wait_ms: options.waitMs,
});
const writeQuery = (options: WriteOptions) => ({ wait: options.wait, wait_ms: options.waitMs });
const list = (value: SortOption | undefined) =>
  typeof value === 'string' || value === undefined ? value : value.join(',');

/** The gateway's 400 for an offset past its bound. */
const offsetRefused = (error: unknown) =>
  error instanceof TailbaseError &&
  error.code === 'invalid_parameter' &&
  error.details.parameter === 'offset';

export class Collection<Doc = JsonValue> {
  constructor(
    private readonly transport: Transport,
    readonly name: string,
  ) {}

  private docPath(key: string): string {
    return `/v1/collections/${segment(this.name)}/docs/${segment(key)}`;
  }

  put(key: string, doc: Doc, options: WriteOptions = {}): Promise<WriteAnswer> {
    return this.putJson(key, JSON.stringify(doc), options);
  }

  /** Writes a document given as JSON text, stored as written (big integers stay exact). */
  putJson(key: string, json: string, options: WriteOptions = {}): Promise<WriteAnswer> {
    return this.transport.json({
      method: 'PUT',
      path: this.docPath(key),
      query: writeQuery(options),
      body: json,
      contentType: 'application/json',
      idempotent: true,
      signal: options.signal,
    });
  }

  delete(key: string, options: WriteOptions = {}): Promise<WriteAnswer> {
    return this.transport.json({
      method: 'DELETE',
      path: this.docPath(key),
      query: writeQuery(options),
      idempotent: true,
      signal: options.signal,
    });
  }

  /** The document; a TailbaseError 404 `document_not_found` when there is none. */
  get(key: string, options: ReadOptions = {}): Promise<Document<Doc>> {
    return this.transport.json({
      method: 'GET',
      path: this.docPath(key),
      query: readQuery(options),
      idempotent: true,
      signal: options.signal,
    });
  }

  /** One page of documents in key order. */
  scanPage(options: ScanOptions = {}): Promise<ScanPage<Doc>> {
    const { prefix, start, end, limit, cursor, filter, sort } = options;
    return this.transport.json({
      method: 'GET',
      path: `/v1/collections/${segment(this.name)}/docs`,
      query: { prefix, start, end, limit, cursor, filter, sort: list(sort), ...readQuery(options) },
      idempotent: true,
      signal: options.signal,
    });
  }

  /** Every page of the range, following the cursor (at most pagesMax pages). */
  async *scan(options: ScanOptions & PagesOptions = {}): AsyncGenerator<ScanPage<Doc>> {
    const pagesMax = options.pagesMax ?? PAGES_MAX_DEFAULT;
    let cursor = options.cursor;
    for (let pages = 0; pages < pagesMax; pages++) {
      const page = await this.scanPage({ ...options, cursor });
      yield page;
      if (page.cursor === null) return;
      cursor = page.cursor;
    }
  }

  /** One page of ranked hits. */
  searchPage(q: string, options: SearchOptions = {}): Promise<SearchResult<Doc>> {
    const { limit, offset, highlight, filter, sort, facets } = options;
    return this.transport.json({
      method: 'GET',
      path: `/v1/collections/${segment(this.name)}/search`,
      query: {
        q,
        limit,
        offset,
        highlight: highlight ? true : undefined,
        filter,
        sort: list(sort),
        facets: list(facets),
        ...readQuery(options),
      },
      idempotent: true,
      signal: options.signal,
    });
  }

  /**
   * Pages of hits from `offset` on, until a page comes back short (at most pagesMax pages; the
   * gateway's searchOffsetMax bounds how deep any search reads).
   */
  async *search(
    q: string,
    options: SearchOptions & PagesOptions = {},
  ): AsyncGenerator<SearchResult<Doc>> {
    const pagesMax = options.pagesMax ?? PAGES_MAX_DEFAULT;
    let offset = options.offset ?? 0;
    for (let pages = 0; pages < pagesMax; pages++) {
      let page: SearchResult<Doc>;
      try {
        page = await this.searchPage(q, { ...options, offset });
      } catch (error) {
        // Past the deepest page the gateway serves (its searchOffsetMax) the hits end for the
        // iterator, as they do when a page comes back short; the caller's own offset still throws.
        if (pages > 0 && offsetRefused(error)) return;
        throw error;
      }
      yield page;
      const size = options.limit ?? page.hits.length;
      offset += page.hits.length;
      const counted = page.totalRelation === 'eq' && offset >= page.total;
      if (page.hits.length === 0 || page.hits.length < size || counted) return;
    }
  }

  /** One bulk request of NDJSON lines `{key, value}`, as given. */
  bulkNdjson(ndjson: string, options: WriteOptions = {}): Promise<BulkAnswer> {
    return this.transport.json({
      method: 'POST',
      path: `/v1/collections/${segment(this.name)}/docs`,
      query: writeQuery(options),
      body: ndjson,
      contentType: 'application/x-ndjson',
      // A bulk may span partitions: see retry.ts for why only refusals are retried.
      idempotent: false,
      signal: options.signal,
    });
  }

  /**
   * Writes the items in requests of at most chunkRecords records and chunkBytes bytes, one after
   * another (two in flight could reorder two writes of one key), reporting progress after each.
   * A rejected request stops the load; the requests before it stay written.
   */
  async bulk(
    items: Iterable<BulkItem<Doc>> | AsyncIterable<BulkItem<Doc>>,
    options: BulkOptions = {},
  ): Promise<BulkResult> {
    const recordsMax = options.chunkRecords ?? BULK_CHUNK_RECORDS_DEFAULT;
    const bytesMax = options.chunkBytes ?? BULK_CHUNK_BYTES_DEFAULT;
    const progress: BulkResult = { records: 0, requests: 0, token: this.transport.token ?? '' };
    let lines: string[] = [];
    let bytes = 0;
    const flush = async () => {
      const answer = await this.bulkNdjson(lines.join('\n'), options);
      progress.records += answer.count;
      progress.requests += 1;
      progress.token = this.transport.token ?? answer.token;
      lines = [];
      bytes = 0;
      options.onProgress?.({ ...progress });
    };
    for await (const item of items) {
      const line = JSON.stringify({ key: item.key, value: item.value });
      const lineBytes = utf8.encode(line).length + 1;
      if (lines.length > 0 && bytes + lineBytes > bytesMax) await flush();
      lines.push(line);
      bytes += lineBytes;
      if (lines.length >= recordsMax) await flush();
    }
    if (lines.length > 0) await flush();
    return progress;
  }

  /** The collection's settings and topic configs as the log holds them. */
  getSettings(options: CallOptions = {}): Promise<SettingsView> {
    return this.transport.json({
      method: 'GET',
      path: `/v1/collections/${segment(this.name)}/settings`,
      idempotent: true,
      signal: options.signal,
    });
  }

  /** Writes search settings and topic configs (admin scope); a record in the log. */
  putSettings(settings: SettingsBody, options: WriteOptions = {}): Promise<SettingsAnswer> {
    return this.writeSettings('PUT', settings, options);
  }

  /**
   * Merges the fields given into the collection's settings (admin scope): the others stay as
   * they are; a field given null goes back to its default.
   */
  patchSettings(settings: SettingsPatch, options: WriteOptions = {}): Promise<SettingsAnswer> {
    return this.writeSettings('PATCH', settings, options);
  }

  private writeSettings(
    method: 'PUT' | 'PATCH',
    settings: SettingsBody | SettingsPatch,
    options: WriteOptions,
  ): Promise<SettingsAnswer> {
    return this.transport.json({
      method,
      path: `/v1/collections/${segment(this.name)}/settings`,
      query: writeQuery(options),
      body: JSON.stringify(settings),
      contentType: 'application/json',
      idempotent: true,
      signal: options.signal,
    });
  }

  /**
   * Drops the collection (admin scope): its documents, settings and topic go, and tokens of its
   * writes are refused after; a collection created again under the name starts empty.
   */
  drop(options: CallOptions = {}): Promise<DropAnswer> {
    return this.transport.json({
      method: 'DELETE',
      path: `/v1/collections/${segment(this.name)}`,
      // A retry of a drop that happened is a 404, never a second drop: no harm, but no retry.
      idempotent: false,
      signal: options.signal,
    });
  }

  /** This collection's change feed, resuming across dropped connections. */
  changes(options: Omit<ChangesOptions, 'collection'> = {}) {
    return followChanges(this.transport, { ...options, collection: this.name });
  }
}
