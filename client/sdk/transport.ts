/**
 * One HTTP call of the typed client: fetch only (Node 20 and browsers), the API key, the
 * session's token sent and the answer's merged into it, the gateway's error as a TailbaseError,
 * and retries of 429 and 503 within the session's RetryPolicy (retry.ts says which calls).
 */
import { errorInBody, TailbaseError } from '../../shared/errors.js';
import { TOKEN_HEADER } from '../../gateway/api/constants.js';
import { backoffMs, isRetryable, pause, type RetryPolicy } from './retry.js';
import { mergeTokens } from './session-token.js';

export const REQUEST_TIMEOUT_MS_DEFAULT = 60_000;

export interface TransportOptions {
  url: string;
  apiKey?: string;
  /** The session token to start with (one saved from an earlier session). */
  token?: string;
  retry: RetryPolicy;
  /** Bounds one attempt, the server's wait for a token included; streams are not bounded. */
  requestTimeoutMs: number;
  /**
   * The gateway refused the session token (`invalid_token`: another cluster, or its data was
   * wiped). Return true to drop the token and send the call once more without it.
   */
  onInvalidToken?: (error: TailbaseError) => boolean;
  /** Called before each retry, with the attempt about to be made and the error before it. */
  onRetry?: (attempt: number, error: TailbaseError) => void;
  fetch?: typeof fetch;
  /** In [0, 1): the jitter of backoffs (Math.random). */
  random?: () => number;
}

export type QueryValue = string | number | boolean | undefined;

export interface Call {
  method: 'GET' | 'PUT' | 'PATCH' | 'POST' | 'DELETE';
  path: string;
  query?: Record<string, QueryValue>;
  body?: string;
  contentType?: string;
  /** Safe to send again whatever happened to an earlier attempt (retry.ts). */
  idempotent: boolean;
  /** false: neither send nor keep the session token (the change feed keeps its own position). */
  session?: boolean;
  /** An answer streamed for as long as the caller reads it: no timeout. */
  stream?: boolean;
  signal?: AbortSignal;
}

export class Transport {
  readonly url: string;
  private sessionToken: string | undefined;

  constructor(private readonly options: TransportOptions) {
    this.url = options.url.replace(/\/+$/, '');
    this.sessionToken = options.token;
  }

  /** The session's token: every token answered so far, merged. */
  get token(): string | undefined {
    return this.sessionToken;
  }

  /** Merges a token obtained elsewhere (another tab, a saved session) into the session's. */
  keep(token: string): void {
    this.sessionToken = mergeTokens(this.sessionToken, token);
  }

  async json<T>(call: Call): Promise<T> {
    const response = await this.send(call);
    return (await response.json()) as T;
  }

  async send(call: Call): Promise<Response> {
    const withToken = call.session !== false && this.sessionToken !== undefined;
    try {
      return await this.withRetries(call, withToken);
    } catch (error) {
      const drop =
        withToken &&
        error instanceof TailbaseError &&
        error.code === 'invalid_token' &&
        this.options.onInvalidToken?.(error) === true;
      if (!drop) throw error;
      this.sessionToken = undefined;
      return this.withRetries(call, false);
    }
  }

  private async withRetries(call: Call, withToken: boolean): Promise<Response> {
    const { retry, random = Math.random } = this.options;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.attempt(call, withToken);
      } catch (error) {
        const last = attempt >= retry.attemptsMax || call.signal?.aborted;
        if (last || !isRetryable(error, call.idempotent)) throw error;
        const failure = error as TailbaseError;
        const asked = Number(failure.details.retryAfterMs ?? 0);
        const waitMs = Math.min(
          retry.backoffMsMax,
          Math.max(asked, backoffMs(retry, attempt, random)),
        );
        this.options.onRetry?.(attempt + 1, failure);
        await pause(waitMs, call.signal);
      }
    }
  }

  private async attempt(call: Call, withToken: boolean): Promise<Response> {
    const url = new URL(this.url + call.path);
    for (const [name, value] of Object.entries(call.query ?? {})) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    const headers: Record<string, string> = {};
    if (withToken && this.sessionToken !== undefined) headers[TOKEN_HEADER] = this.sessionToken;
    if (this.options.apiKey !== undefined) headers.authorization = `Bearer ${this.options.apiKey}`;
    if (call.contentType !== undefined) headers['content-type'] = call.contentType;
    const timeout = call.stream ? undefined : AbortSignal.timeout(this.options.requestTimeoutMs);
    const signals = [call.signal, timeout].filter((s): s is AbortSignal => s !== undefined);
    const send = this.options.fetch ?? fetch;
    let response: Response;
    try {
      response = await send(url, {
        method: call.method,
        headers,
        body: call.body,
        signal: signals.length === 0 ? undefined : AbortSignal.any(signals),
      });
    } catch (cause) {
      throw this.transportError(cause, timeout);
    }
    const answered = response.headers.get(TOKEN_HEADER);
    if (call.session !== false && answered) this.keep(answered);
    if (!response.ok) throw await this.answeredError(response);
    return response;
  }

  private async answeredError(response: Response): Promise<TailbaseError> {
    const text = await response.text().catch(() => '');
    let body: unknown = null;
    try {
      body = JSON.parse(text);
    } catch {
      body = null;
    }
    const error =
      errorInBody(response.status, body) ??
      new TailbaseError(
        response.status,
        'http_error',
        `${this.url} answered ${response.status} ${response.statusText}`.trim(),
      );
    // Retry-After in seconds (RFC 9110 §10.2.3), kept for the backoff.
    const retryAfter = Number(response.headers.get('retry-after'));
    if (retryAfter > 0) error.details.retryAfterMs = retryAfter * 1000;
    return error;
  }

  private transportError(cause: unknown, timeout: AbortSignal | undefined): Error {
    if (timeout?.aborted) {
      return new TailbaseError(
        504,
        'client_timeout',
        `${this.url} did not answer within ${this.options.requestTimeoutMs} ms`,
        {},
        { cause },
      );
    }
    if ((cause as Error).name === 'AbortError') return cause as Error;
    const reason = (cause as { cause?: { code?: string; message?: string } }).cause;
    // The cause stays attached: a refused connection sent nothing, so retry.ts retries any call
    // on it, while other failures (a reset, a browser's opaque TypeError) may have reached it.
    return new TailbaseError(
      503,
      'unreachable',
      `cannot reach ${this.url}: ${reason?.code ?? reason?.message ?? (cause as Error).message}`,
      {},
      { cause },
    );
  }
}
