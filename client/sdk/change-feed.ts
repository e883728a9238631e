/**
 * The change feed as an async iterator that survives dropped connections: after the gateway
 * closes the stream or the connection drops, it reconnects with the token of the last event it
 * yielded (or the position the stream opened at), so no event is missed and none is seen twice.
 * Failed connections in a row are bounded by `reconnectsMax`; a 4xx answer (a bad token, a bad
 * collection) is not retried.
 *
 * It yields two kinds of lines: a document's change (`ChangeEvent`), and, on a view's feed, a
 * reset (`ChangeReset`, `reset: true`) when the view's version is replaced: the consumer forgets
 * the view's documents it holds, and the new version's documents follow from its start. `isReset`
 * tells them apart; a reset is no event for `limit`.
 */
import { errorInBody, TailbaseError } from '../../shared/errors.js';
import { TOKEN_HEADER } from '../../gateway/api/constants.js';
import type { ChangeLine, ChangeReset, ChangesQuery } from '../../gateway/api/index.js';
import { pause } from './retry.js';
import type { Transport } from './transport.js';

export interface ChangesOptions {
  /** Follow one collection; every collection when left out. */
  collection?: string;
  /** Where to start without a token: the log start (default) or its end. */
  from?: 'start' | 'now';
  /** Resume after this feed position (an event's token); it is not the session token. */
  token?: string;
  /** Only records whose documents match (a filter on filterable fields). */
  filter?: string;
  /** Stop after this many events. */
  limit?: number;
  /** Failed or closed connections in a row before the iterator throws. */
  reconnectsMax?: number;
  /** The first pause before reconnecting; doubled each time up to backoffMsMax. */
  backoffMsFirst?: number;
  backoffMsMax?: number;
  signal?: AbortSignal;
  onReconnect?: (attempt: number, error: unknown) => void;
}

export const FEED_RECONNECTS_MAX_DEFAULT = 10;
export const FEED_BACKOFF_MS_FIRST = 200;
export const FEED_BACKOFF_MS_MAX = 5000;
/** A change-feed line holds one document, and documents are bounded by the gateway (1 MiB). */
export const FEED_LINE_CHARS_MAX = 16 * 1024 * 1024;

/** Whether a feed line is a view's reset, not a document's change. */
export function isReset(line: ChangeLine): line is ChangeReset {
  return 'reset' in line && line.reset === true;
}

const isPermanent = (error: unknown) =>
  error instanceof TailbaseError &&
  error.status >= 400 &&
  error.status < 500 &&
  error.status !== 429;

/** Lines of a UTF-8 byte stream. */
async function* lines(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8');
  const reader = body.getReader();
  let pending = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      pending += decoder.decode(value, { stream: true });
      let at = pending.indexOf('\n');
      while (at !== -1) {
        yield pending.slice(0, at);
        pending = pending.slice(at + 1);
        at = pending.indexOf('\n');
      }
      if (pending.length > FEED_LINE_CHARS_MAX) {
        throw new TailbaseError(
          502,
          'feed_line_too_long',
          `a feed line exceeds ${FEED_LINE_CHARS_MAX} characters`,
        );
      }
    }
    pending += decoder.decode();
    if (pending !== '') yield pending;
  } finally {
    await reader.cancel().catch(() => {});
  }
}

/** One connection to the feed: the position it opened at, and its events until it ends. */
export async function openChanges(transport: Transport, options: ChangesOptions) {
  const query: ChangesQuery = {
    collection: options.collection,
    token: options.token,
    from: options.token === undefined ? options.from : undefined,
    filter: options.filter,
    limit: options.limit,
  };
  const response = await transport.send({
    method: 'GET',
    path: '/v1/changes',
    query,
    idempotent: true,
    session: false,
    stream: true,
    signal: options.signal,
  });
  const body = response.body;
  async function* events(): AsyncGenerator<ChangeLine> {
    if (body === null) return;
    for await (const line of lines(body)) {
      if (line.trim() === '') continue;
      const parsed = JSON.parse(line) as ChangeLine | { error?: unknown };
      if ('error' in parsed && parsed.error !== undefined) {
        throw (
          errorInBody(502, parsed) ??
          new TailbaseError(502, 'http_error', 'the change feed sent a malformed error')
        );
      }
      yield parsed as ChangeLine;
    }
  }
  return { token: response.headers.get(TOKEN_HEADER) ?? undefined, events: events() };
}

export async function* followChanges(
  transport: Transport,
  options: ChangesOptions = {},
): AsyncGenerator<ChangeLine> {
  const reconnectsMax = options.reconnectsMax ?? FEED_RECONNECTS_MAX_DEFAULT;
  const backoffMsFirst = options.backoffMsFirst ?? FEED_BACKOFF_MS_FIRST;
  const backoffMsMax = options.backoffMsMax ?? FEED_BACKOFF_MS_MAX;
  let position = options.token;
  let remaining = options.limit;
  let failures = 0;
  for (;;) {
    let failure: unknown = new Error('the gateway closed the change feed');
    try {
      const stream = await openChanges(transport, {
        ...options,
        token: position,
        limit: remaining,
      });
      position ??= stream.token;
      for await (const event of stream.events) {
        position = event.token;
        failures = 0;
        yield event;
        if (isReset(event)) continue;
        if (remaining !== undefined && --remaining === 0) return;
      }
    } catch (error) {
      if (options.signal?.aborted) return;
      if (isPermanent(error)) throw error;
      failure = error;
    }
    if (options.signal?.aborted) return;
    failures += 1;
    if (failures > reconnectsMax) throw failure;
    options.onReconnect?.(failures, failure);
    await pause(Math.min(backoffMsFirst * 2 ** (failures - 1), backoffMsMax), options.signal);
  }
}
