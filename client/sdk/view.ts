/**
 * One view through the typed client: its definition (define, info, drop) and the reads of a
 * collection, since a view is read as the collection of its name. Every call carries the
 * session's token, so a read of a view after a write to its source reads that write.
 */
import type { ViewDefinitionBody, ViewDropAnswer, ViewInfo } from '../../gateway/api/index.js';
import type { ChangesOptions } from './change-feed.js';
import { Collection } from './collection.js';
import type { Transport } from './transport.js';
import type {
  CallOptions,
  Document,
  JsonValue,
  PagesOptions,
  ReadOptions,
  ScanOptions,
  ScanPage,
  SearchOptions,
  SearchResult,
} from './types.js';

export class View<Doc = JsonValue> {
  private readonly docs: Collection<Doc>;

  constructor(
    private readonly transport: Transport,
    readonly name: string,
  ) {
    this.docs = new Collection<Doc>(transport, name);
  }

  private get path(): string {
    return `/v1/views/${encodeURIComponent(this.name)}`;
  }

  /** Declares the view (admin scope); the same definition again answers it again. */
  define(definition: ViewDefinitionBody, options: CallOptions = {}): Promise<ViewInfo> {
    return this.transport.json({
      method: 'PUT',
      path: this.path,
      body: JSON.stringify(definition),
      contentType: 'application/json',
      idempotent: true,
      signal: options.signal,
    });
  }

  /** Its definition, version, and per source partition its frontier and lag. */
  info(options: CallOptions = {}): Promise<ViewInfo> {
    return this.transport.json({
      method: 'GET',
      path: this.path,
      idempotent: true,
      signal: options.signal,
    });
  }

  /** Drops the view (admin scope): its definition, processor, topic and tables. */
  drop(options: CallOptions = {}): Promise<ViewDropAnswer> {
    return this.transport.json({
      method: 'DELETE',
      path: this.path,
      // A retry of a drop that happened is a 404, never a second drop: no harm, but no retry.
      idempotent: false,
      signal: options.signal,
    });
  }

  /** An output document: for a grouping, the key is the JSON text of its groupBy values. */
  get(key: string, options: ReadOptions = {}): Promise<Document<Doc>> {
    return this.docs.get(key, options);
  }

  /** The output document of the group of these groupBy values, in the definition's order. */
  group(values: readonly JsonValue[], options: ReadOptions = {}): Promise<Document<Doc>> {
    return this.docs.get(JSON.stringify(values), options);
  }

  scanPage(options: ScanOptions = {}): Promise<ScanPage<Doc>> {
    return this.docs.scanPage(options);
  }

  scan(options: ScanOptions & PagesOptions = {}): AsyncGenerator<ScanPage<Doc>> {
    return this.docs.scan(options);
  }

  searchPage(q: string, options: SearchOptions = {}): Promise<SearchResult<Doc>> {
    return this.docs.searchPage(q, options);
  }

  search(q: string, options: SearchOptions & PagesOptions = {}): AsyncGenerator<SearchResult<Doc>> {
    return this.docs.search(q, options);
  }

  changes(options: Omit<ChangesOptions, 'collection'> = {}) {
    return this.docs.changes(options);
  }
}
