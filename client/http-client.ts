/**
 * A typed client of tailbase's public HTTP API (DESIGN.md) that keeps the session token: every
 * request carries the latest token in the `Tailbase-Token` header and every answer's token
 * replaces it (the gateway answers with the merge), so the client reads its own writes. The
 * command line keeps that token between runs in a file (token-store.ts).
 */
import { errorInBody, TailbaseError } from '../shared/errors.js';
import type { ServeStatus } from '../shared/serve-api.js';
import { splitLines } from './ndjson.js';

export const TOKEN_HEADER = 'Tailbase-Token';

export type JsonValue =
  null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

export type Consistency = 'token' | 'strong' | 'eventual';
export const CONSISTENCY_LEVELS: readonly Consistency[] = ['token', 'strong', 'eventual'];

export interface WriteResult {
  key: string;
  partition: number;
  offset: number;
  token: string;
}

export interface Document {
  key: string;
  value: JsonValue;
  offset: number;
}

export interface ReadOptions {
  consistency?: Consistency;
  waitMs?: number;
}

export interface ScanOptions extends ReadOptions {
  prefix?: string;
  start?: string;
  end?: string;
  limit?: number;
  cursor?: string;
}

export interface ScanPage {
  items: Document[];
  /** Pass it back as `cursor` for the next page; null once the range is exhausted. */
  cursor: string | null;
}

export interface SearchOptions extends ReadOptions {
  limit?: number;
  offset?: number;
  highlight?: boolean;
}

export interface SearchHit {
  key: string;
  score: number;
  value: JsonValue;
  highlights?: Record<string, string>;
}

export interface SearchResult {
  hits: SearchHit[];
  total: number;
}

export interface BulkResult {
  count: number;
  token: string;
}

export interface ChangeEvent {
  collection: string;
  key: string;
  /** null for a delete. */
  value: JsonValue;
  partition: number;
  offset: number;
  /** Resumes the feed exactly after this event. */
  token: string;
}

export interface ChangesOptions {
  collection?: string;
  /** Where to start without a token: the log start (default) or its end. */
  from?: 'start' | 'now';
  /** The feed position to resume after; it is not the session token. */
  token?: string;
  limit?: number;
  signal?: AbortSignal;
}

export interface ChangeStream {
  /** The position the feed started at, to resume from if no event arrives. */
  token: string | undefined;
  events: AsyncIterable<ChangeEvent>;
}

export interface ClientOptions {
  url: string;
  /** The session token to start with. */
  token?: string;
  /** Sent as `Authorization: Bearer <key>`. */
  apiKey?: string;
  /** Bounds a request, the server's wait for a token included; streams are not bounded. */
  requestTimeoutMs?: number;
  /**
   * The gateway rejected the session token (`invalid_token`: another cluster, say, after its data
   * was wiped). Return true to drop the token and send the request once more without it.
   */
  onInvalidToken?: (error: TailbaseError) => boolean;
}

export const REQUEST_TIMEOUT_MS_DEFAULT = 60_000;
/** A change-feed line holds one document, and documents are bounded by the gateway (1 MiB). */
const FEED_LINE_CHARS_MAX = 16 * 1024 * 1024;

interface RequestInit {
  method?: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: string;
  contentType?: string;
  /** false: neither send nor keep the session token (the change feed has its own position). */
  session?: boolean;
  stream?: boolean;
  signal?: AbortSignal;
}

const segment = (text: string) => encodeURIComponent(text);

function readQuery(options: ReadOptions) {
  return { consistency: options.consistency, wait_ms: options.waitMs };
}

export class TailbaseClient {
  readonly url: string;
  private sessionToken: string | undefined;
  private readonly apiKey: string | undefined;
  private readonly requestTimeoutMs: number;
  private readonly onInvalidToken: ClientOptions['onInvalidToken'];

  constructor(options: ClientOptions) {
    this.url = options.url.replace(/\/+$/, '');
    this.sessionToken = options.token;
    this.apiKey = options.apiKey;
    this.requestTimeoutMs = options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS_DEFAULT;
    this.onInvalidToken = options.onInvalidToken;
  }

  /** The latest token the gateway answered with (or the one the client started with). */
  get token(): string | undefined {
    return this.sessionToken;
  }

  put(collection: string, key: string, json: string): Promise<WriteResult> {
    return this.json(`/v1/collections/${segment(collection)}/docs/${segment(key)}`, {
      method: 'PUT',
      body: json,
      contentType: 'application/json',
    });
  }

  delete(collection: string, key: string): Promise<WriteResult> {
    return this.json(`/v1/collections/${segment(collection)}/docs/${segment(key)}`, {
      method: 'DELETE',
    });
  }

  get(collection: string, key: string, options: ReadOptions = {}): Promise<Document> {
    return this.json(`/v1/collections/${segment(collection)}/docs/${segment(key)}`, {
      query: readQuery(options),
    });
  }

  scan(collection: string, options: ScanOptions = {}): Promise<ScanPage> {
    const { prefix, start, end, limit, cursor } = options;
    return this.json(`/v1/collections/${segment(collection)}/docs`, {
      query: { prefix, start, end, limit, cursor, ...readQuery(options) },
    });
  }

  search(collection: string, q: string, options: SearchOptions = {}): Promise<SearchResult> {
    const { limit, offset, highlight } = options;
    return this.json(`/v1/collections/${segment(collection)}/search`, {
      query: { q, limit, offset, highlight: highlight ? true : undefined, ...readQuery(options) },
    });
  }

  /** One bulk request: NDJSON lines of `{key, value}` (`value: null` deletes). */
  bulk(collection: string, ndjson: string): Promise<BulkResult> {
    return this.json(`/v1/collections/${segment(collection)}/docs`, {
      method: 'POST',
      body: ndjson,
      contentType: 'application/x-ndjson',
    });
  }

  status(): Promise<unknown> {
    return this.json('/v1/status', {});
  }

  /** A serve-node's own status, by its index in status() (admin scope). */
  serveNodeStatus(node: number): Promise<ServeStatus> {
    return this.json(`/v1/admin/serve-nodes/${node}/status`, {});
  }

  /** Wipes a serve-node's stores and replays the log (admin scope); poll serveNodeStatus(). */
  async rebuildServeNode(node: number): Promise<void> {
    await this.json(`/v1/admin/serve-nodes/${node}/rebuild`, { method: 'POST' });
  }

  /** One connection to the change feed; it ends when the gateway closes it. */
  async changes(options: ChangesOptions = {}): Promise<ChangeStream> {
    const response = await this.request('/v1/changes', {
      query: {
        collection: options.collection,
        token: options.token,
        from: options.token === undefined ? options.from : undefined,
        limit: options.limit,
      },
      session: false,
      stream: true,
      signal: options.signal,
    });
    const body = response.body;
    return {
      token: response.headers.get(TOKEN_HEADER) ?? undefined,
      events: (async function* () {
        if (body === null) return;
        for await (const line of splitLines(body, FEED_LINE_CHARS_MAX)) {
          if (line.text.trim() === '') continue;
          const parsed = JSON.parse(line.text) as ChangeEvent | { error?: unknown };
          if ('error' in parsed && parsed.error !== undefined) {
            throw (
              errorInBody(502, parsed) ??
              new TailbaseError(502, 'http_error', 'the change feed sent a malformed error')
            );
          }
          yield parsed as ChangeEvent;
        }
      })(),
    };
  }

  private async json<T>(path: string, init: RequestInit): Promise<T> {
    const response = await this.request(path, init);
    return (await response.json()) as T;
  }

  private async request(path: string, init: RequestInit): Promise<Response> {
    const withToken = init.session !== false && this.sessionToken !== undefined;
    try {
      return await this.send(path, init, withToken);
    } catch (error) {
      if (
        withToken &&
        error instanceof TailbaseError &&
        error.code === 'invalid_token' &&
        this.onInvalidToken?.(error) === true
      ) {
        this.sessionToken = undefined;
        return this.send(path, init, false);
      }
      throw error;
    }
  }

  private async send(path: string, init: RequestInit, withToken: boolean): Promise<Response> {
    const url = new URL(this.url + path);
    for (const [name, value] of Object.entries(init.query ?? {})) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    const headers: Record<string, string> = {};
    if (withToken) headers[TOKEN_HEADER] = this.sessionToken as string;
    if (this.apiKey !== undefined) headers.authorization = `Bearer ${this.apiKey}`;
    if (init.contentType !== undefined) headers['content-type'] = init.contentType;
    const timeout = init.stream ? undefined : AbortSignal.timeout(this.requestTimeoutMs);
    const signals = [init.signal, timeout].filter((s): s is AbortSignal => s !== undefined);
    let response: Response;
    try {
      response = await fetch(url, {
        method: init.method ?? 'GET',
        headers,
        body: init.body,
        signal: signals.length === 0 ? undefined : AbortSignal.any(signals),
      });
    } catch (cause) {
      throw this.transportError(cause, timeout);
    }
    if (init.session !== false) {
      const answered = response.headers.get(TOKEN_HEADER);
      if (answered) this.sessionToken = answered;
    }
    if (!response.ok) {
      const text = await response.text().catch(() => '');
      let body: unknown = null;
      try {
        body = JSON.parse(text);
      } catch {
        body = null;
      }
      throw (
        // The gateway's error as answered: errorFromBody is for calls between nodes, where a
        // 401 or 403 means a misconfigured cluster, not the caller's missing or weak key.
        errorInBody(response.status, body) ??
        new TailbaseError(
          response.status,
          'http_error',
          `${this.url} answered ${response.status} ${response.statusText}`.trim(),
        )
      );
    }
    return response;
  }

  private transportError(cause: unknown, timeout: AbortSignal | undefined): Error {
    if (timeout?.aborted) {
      return new TailbaseError(
        504,
        'client_timeout',
        `${this.url} did not answer within ${this.requestTimeoutMs} ms`,
        {},
        { cause },
      );
    }
    if ((cause as Error).name === 'AbortError') return cause as Error;
    const reason = (cause as { cause?: { code?: string; message?: string } }).cause;
    return new TailbaseError(
      503,
      'unreachable',
      `cannot reach ${this.url}: ${reason?.code ?? reason?.message ?? (cause as Error).message}`,
      {},
      { cause },
    );
  }
}
