/**
 * The serve contract (serve-api.ts) over a serve-node's internal HTTP API, used by the gateway,
 * tests and benchmarks in a multi-process cluster. The routes are documented in
 * serve-node/README.md.
 */
import { BatchedGets } from './batched-gets.js';
import { errorFromBody, TailbaseError } from './errors.js';
import { InternalHttp, type InternalResponse } from './internal-http.js';
import { CLUSTER_SECRET_HEADER } from './log-api.js';
import {
  formatWaitFor,
  type CollectionStoreBytes,
  GET_BATCH_KEYS_MAX,
  SERVE_WAIT_MS_MAX,
  type AppliedOffsets,
  type BatchedGet,
  type BatchedGetAnswer,
  type GetResult,
  type ScanOptions,
  type ScanResult,
  type SearchOptions,
  type SearchResult,
  type ServeClient,
  type ServedDocument,
  type ServeReadOptions,
  type ServeStatus,
  type SnapshotResult,
} from './serve-api.js';

export interface HttpServeClientOptions {
  /** Sent as the `tailbase-cluster-secret` header when the serve-node requires it. */
  clusterSecret?: string;
  /** Keys per batched read (at most the serve-node's `getBatchKeysMax`). */
  getBatchKeysMax?: number;
  /**
   * How long the node may take to answer, on top of the wait a read asks for; past it the call
   * fails as `serve_unreachable`, so a hung node is skipped like a crashed one. None by default.
   */
  answerMsMax?: number;
}

/** Batched reads out at once to one serve-node. */
const GET_BATCHES_IN_FLIGHT_MAX = 2;

export class HttpServeClient implements ServeClient {
  readonly url: string;
  private readonly http: InternalHttp;
  private readonly gets: BatchedGets;
  private readonly answerMsMax: number | undefined;

  constructor(url: string, options: HttpServeClientOptions = {}) {
    this.answerMsMax = options.answerMsMax;
    const headers: Record<string, string> = options.clusterSecret
      ? { [CLUSTER_SECRET_HEADER]: options.clusterSecret }
      : {};
    this.http = new InternalHttp(url, 'serve-node', headers);
    this.url = this.http.url;
    this.gets = new BatchedGets({
      batchMax: options.getBatchKeysMax ?? GET_BATCH_KEYS_MAX,
      inFlightMax: GET_BATCHES_IN_FLIGHT_MAX,
      sendBatch: (items) => this.getBatch(items),
      sendOne: (collection, key, read) => this.getOne(collection, key, read),
    });
  }

  /** Batched with the reads made at the same time when it need not wait (batched-gets.ts). */
  get(collection: string, key: string, options: ServeReadOptions = {}): Promise<GetResult> {
    return this.gets.get(collection, key, options);
  }

  private async getBatch(items: BatchedGet[]): Promise<BatchedGetAnswer[]> {
    const response = await this.fetch('/internal/docs', {}, 'POST', { items });
    const body = response.json() as {
      items: (ServedDocument | null | false)[];
      /** Per collection named in the batch. */
      applied: Record<string, AppliedOffsets>;
    } | null;
    if (response.ok) {
      if (body === null || !Array.isArray(body.items) || body.items.length !== items.length) {
        throw new TailbaseError(
          502,
          'peer_error',
          'the serve-node answered another number of reads',
        );
      }
      return body.items.map((doc, i) =>
        doc === false ? 'pending' : { doc, applied: body.applied[items[i].collection] ?? {} },
      );
    }
    const error = errorFromBody(response.status, body);
    // A batch the node refuses as a whole: each read goes alone and gets its own answer or error.
    if (error.status < 500) return items.map(() => 'pending');
    throw error;
  }

  private async getOne(
    collection: string,
    key: string,
    options: ServeReadOptions,
  ): Promise<GetResult> {
    const path = `/internal/docs/${encodeURIComponent(collection)}/${encodeURIComponent(key)}`;
    const response = await this.fetch(path + query(readParams(options)), options);
    const body = response.json() as
      | (ServedDocument & { applied: AppliedOffsets })
      | { error: { code: string; applied?: AppliedOffsets } }
      | null;
    if (response.status === 404 && body && 'error' in body) {
      if (body.error.code === 'document_not_found') {
        return { doc: null, applied: body.error.applied ?? {} };
      }
    }
    if (!response.ok || body === null || 'error' in body)
      throw errorFromBody(response.status, body);
    const { applied, ...doc } = body;
    return { doc, applied };
  }

  async scan(collection: string, options: ScanOptions = {}): Promise<ScanResult> {
    const params = readParams(options);
    for (const name of ['prefix', 'start', 'end', 'after'] as const) {
      const value = options[name];
      if (value !== undefined) params.set(name, value);
    }
    if (options.limit !== undefined) params.set('limit', String(options.limit));
    if (options.filter !== undefined) params.set('filter', options.filter);
    if (options.sort !== undefined) params.set('sort', options.sort);
    if (options.afterSort !== undefined)
      params.set('after_sort', JSON.stringify(options.afterSort));
    const path = `/internal/scan/${encodeURIComponent(collection)}`;
    return this.json<ScanResult>(await this.fetch(path + query(params), options));
  }

  async search(collection: string, options: SearchOptions): Promise<SearchResult> {
    const params = readParams(options);
    params.set('q', options.q);
    if (options.limit !== undefined) params.set('limit', String(options.limit));
    if (options.offset !== undefined) params.set('offset', String(options.offset));
    if (options.highlight) params.set('highlight', 'true');
    for (const name of ['filter', 'sort', 'facets'] as const) {
      const value = options[name];
      if (value !== undefined) params.set(name, value);
    }
    const path = `/internal/search/${encodeURIComponent(collection)}`;
    return this.json<SearchResult>(await this.fetch(path + query(params), options));
  }

  async countDocuments(collection: string, partitions?: readonly number[]): Promise<number> {
    const params = new URLSearchParams();
    if (partitions !== undefined && partitions.length > 0) {
      params.set('partitions', partitions.join(','));
    }
    const path = `/internal/count/${encodeURIComponent(collection)}`;
    return (await this.json<{ documents: number }>(await this.fetch(path + query(params))))
      .documents;
  }

  async storeBytes(): Promise<CollectionStoreBytes[]> {
    return (
      await this.json<{ collections: CollectionStoreBytes[] }>(
        await this.fetch('/internal/store-bytes'),
      )
    ).collections;
  }

  async status(): Promise<ServeStatus> {
    return this.json<ServeStatus>(await this.fetch('/internal/status'));
  }

  async ready(): Promise<boolean> {
    const response = await this.fetch('/readyz');
    return response.status === 200;
  }

  async rebuild(): Promise<void> {
    await this.json<unknown>(await this.admin('/internal/admin/rebuild'));
  }

  async dropCollection(collection: string, signal?: AbortSignal): Promise<void> {
    await this.json<unknown>(await this.admin('/internal/admin/drop', { collection }, signal));
  }

  async snapshot(dir: string): Promise<SnapshotResult> {
    return this.json<SnapshotResult>(await this.admin('/internal/admin/snapshot', { dir }));
  }

  /**
   * A call bounded by answerMsMax plus the wait it asks the node for (the node's own bound when
   * it waits for offsets without wait_ms).
   */
  private fetch(
    path: string,
    read: ServeReadOptions = {},
    method = 'GET',
    body?: unknown,
  ): Promise<InternalResponse> {
    const waits =
      (read.waitFor !== undefined && Object.keys(read.waitFor).length > 0) ||
      read.settingsWaitFor !== undefined;
    // A read with nothing to wait for answers at once, whatever wait it carries.
    const waitMs = waits ? (read.waitMs ?? SERVE_WAIT_MS_MAX) : 0;
    return this.http.request(path, {
      method,
      signal: read.signal,
      ...(this.answerMsMax === undefined ? {} : { timeoutMs: this.answerMsMax + waitMs }),
      ...jsonBody(body),
    });
  }

  /** An admin call, not bounded by answerMsMax: a snapshot or a drop takes its time. */
  private admin(path: string, body?: unknown, signal?: AbortSignal): Promise<InternalResponse> {
    return this.http.request(path, { method: 'POST', signal, ...jsonBody(body) });
  }

  private json<T>(response: InternalResponse): T {
    const body = response.json();
    if (!response.ok) throw errorFromBody(response.status, body);
    return body as T;
  }

  close(): void {
    this.http.close();
  }
}

function jsonBody(body: unknown): { headers?: Record<string, string>; body?: string } {
  return body === undefined
    ? {}
    : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
}

function readParams(
  options: ServeReadOptions & { partitions?: readonly number[] },
): URLSearchParams {
  const params = new URLSearchParams();
  if (options.partitions !== undefined && options.partitions.length > 0) {
    params.set('partitions', options.partitions.join(','));
  }
  if (options.waitFor && Object.keys(options.waitFor).length > 0) {
    params.set('wait_for', formatWaitFor(options.waitFor));
  }
  if (options.settingsWaitFor !== undefined) {
    params.set('settings_wait_for', String(options.settingsWaitFor));
  }
  if (options.waitMs !== undefined) params.set('wait_ms', String(options.waitMs));
  return params;
}

function query(params: URLSearchParams): string {
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}
