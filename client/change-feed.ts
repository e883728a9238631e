/**
 * Follows the change feed across disconnections: after the gateway closes the stream or the
 * connection drops, it reconnects with the token of the last event received (or the position the
 * stream started at), so no event is missed and none is seen twice. Consecutive failures are
 * bounded; a 4xx answer (a bad token, a bad collection) is not retried.
 */
import { TailbaseError } from '../shared/errors.js';
import type { ChangeEvent, TailbaseClient } from './http-client.js';

export interface FollowOptions {
  collection?: string;
  from?: 'start' | 'now';
  /** Resume after this feed position instead of `from`. */
  token?: string;
  /** Stop after this many events. */
  limit?: number;
  /** Failed or closed connections in a row before giving up. */
  reconnectsMax: number;
  /** The first pause before reconnecting; doubled each time up to backoffMsMax. */
  backoffMs: number;
  backoffMsMax: number;
  signal?: AbortSignal;
  onReconnect?(attempt: number, error: unknown): void;
}

const isPermanent = (error: unknown) =>
  error instanceof TailbaseError &&
  error.status >= 400 &&
  error.status < 500 &&
  error.status !== 429;

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

export async function* followChanges(
  client: TailbaseClient,
  options: FollowOptions,
): AsyncGenerator<ChangeEvent> {
  let position = options.token;
  let remaining = options.limit;
  let failures = 0;
  for (;;) {
    let failure: unknown = new Error('the gateway closed the change feed');
    try {
      const stream = await client.changes({
        collection: options.collection,
        token: position,
        from: options.from,
        limit: remaining,
        signal: options.signal,
      });
      position ??= stream.token;
      for await (const event of stream.events) {
        position = event.token;
        failures = 0;
        yield event;
        if (remaining !== undefined && --remaining === 0) return;
      }
    } catch (error) {
      if (options.signal?.aborted) return;
      if (isPermanent(error)) throw error;
      failure = error;
    }
    if (options.signal?.aborted) return;
    failures += 1;
    if (failures > options.reconnectsMax) throw failure;
    options.onReconnect?.(failures, failure);
    await pause(
      Math.min(options.backoffMs * 2 ** (failures - 1), options.backoffMsMax),
      options.signal,
    );
  }
}
