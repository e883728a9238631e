/**
 * A session with a tailbase gateway: `new Tailbase({ url, apiKey })`. Every call carries the
 * session's token and merges the token it answers, so a put followed by a search (or a get, or a
 * scan) of any collection reads its own write with no extra code, even with calls in flight at
 * once. Two sessions share nothing: a browser tab or a request handler holds one each.
 */
import type {
  CollectionList,
  ViewList,
  RebuildAnswer,
  ServeNodeStatus,
  Status,
} from '../../gateway/api/index.js';
import { followChanges, type ChangesOptions } from './change-feed.js';
import { Collection } from './collection.js';
import { View } from './view.js';
import { checkRetryPolicy, RETRY_DEFAULT, type RetryPolicy } from './retry.js';
import { REQUEST_TIMEOUT_MS_DEFAULT, Transport, type TransportOptions } from './transport.js';
import type { JsonValue, CallOptions } from './types.js';

export interface TailbaseOptions extends Omit<TransportOptions, 'retry' | 'requestTimeoutMs'> {
  /** 429 and 503 retries: at most attemptsMax attempts a call (retry.ts says which calls). */
  retry?: Partial<RetryPolicy>;
  requestTimeoutMs?: number;
}

export class Tailbase {
  private readonly transport: Transport;

  constructor(options: TailbaseOptions) {
    this.transport = new Transport({
      ...options,
      retry: checkRetryPolicy({ ...RETRY_DEFAULT, ...options.retry }),
      requestTimeoutMs: options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS_DEFAULT,
    });
  }

  get url(): string {
    return this.transport.url;
  }

  /** The session's token: save it to resume the session elsewhere (`new Tailbase({ token })`). */
  get token(): string | undefined {
    return this.transport.token;
  }

  /** Merges a token from elsewhere (another session's writes this one must read). */
  keepToken(token: string): void {
    this.transport.keep(token);
  }

  collection<Doc = JsonValue>(name: string): Collection<Doc> {
    return new Collection<Doc>(this.transport, name);
  }

  /** A view, read as a collection of its name, with its definition's calls. */
  view<Doc = JsonValue>(name: string): View<Doc> {
    return new View<Doc>(this.transport, name);
  }

  /** Every view: definition, version, frontiers. */
  async views(options: CallOptions = {}): Promise<ViewList['views']> {
    const answer: ViewList = await this.transport.json({
      method: 'GET',
      path: '/v1/views',
      idempotent: true,
      signal: options.signal,
    });
    return answer.views;
  }

  /** Every collection: partitions, records, the documents the serve-nodes hold, settings version. */
  async collections(options: CallOptions = {}): Promise<CollectionList['collections']> {
    const answer: CollectionList = await this.transport.json({
      method: 'GET',
      path: '/v1/collections',
      idempotent: true,
      signal: options.signal,
    });
    return answer.collections;
  }

  /** The change feed of every collection (or `collection`), resuming across dropped connections. */
  changes(options: ChangesOptions = {}) {
    return followChanges(this.transport, options);
  }

  status(options: CallOptions = {}): Promise<Status> {
    return this.transport.json({
      method: 'GET',
      path: '/v1/status',
      idempotent: true,
      signal: options.signal,
    });
  }

  /** A serve-node's own status, by its index in status() (admin scope). */
  serveNodeStatus(node: number, options: CallOptions = {}): Promise<ServeNodeStatus> {
    return this.transport.json({
      method: 'GET',
      path: `/v1/admin/serve-nodes/${node}/status`,
      idempotent: true,
      signal: options.signal,
    });
  }

  /** Wipes a serve-node's stores and replays the log (admin scope); poll serveNodeStatus(). */
  rebuild(node: number, options: CallOptions = {}): Promise<RebuildAnswer> {
    return this.transport.json({
      method: 'POST',
      path: `/v1/admin/serve-nodes/${node}/rebuild`,
      idempotent: false,
      signal: options.signal,
    });
  }
}
