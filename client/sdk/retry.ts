/**
 * Which failed calls the client sends again, and when. 429 and 503 answers are retried with
 * exponential backoff and full jitter (a random pause up to the doubled step, so clients that
 * failed together do not return together), at most `attemptsMax` attempts a call.
 *
 * A call is retried only when sending it again cannot do harm:
 * - reads, and PUT or DELETE of one key (writing the same value again leaves the same state);
 * - any call the gateway refused before it reached the log: 429, 503 `overloaded` and
 *   `shutting_down` (every partition is admitted before anything is queued, gateway/services.ts),
 *   `too_many_feeds`, and a connection that was refused (nothing was sent).
 * A bulk POST is not retried on other 503s: `append_queue_full` or `log_unavailable` name one
 * partition, while the request's other partitions may have been stored, and
 * `write_outcome_unknown` says the log may hold it. The caller decides (its records, its order).
 */
import { TailbaseError } from '../../shared/errors.js';

export interface RetryPolicy {
  /** Attempts of one call, the first included; 1 turns retries off. */
  attemptsMax: number;
  /** The first pause's bound; each retry doubles it, up to backoffMsMax. */
  backoffMsFirst: number;
  backoffMsMax: number;
}

export const RETRY_DEFAULT: RetryPolicy = {
  attemptsMax: 5,
  backoffMsFirst: 100,
  backoffMsMax: 2000,
};

/** Refusals that prove the gateway took nothing of the request. */
const REFUSED_CODES = new Set(['overloaded', 'shutting_down', 'too_many_feeds']);

/** An `unreachable` whose connection was refused (Node's fetch names the cause; browsers do not). */
export function connectionRefused(error: TailbaseError): boolean {
  const cause = (error.cause as { cause?: { code?: unknown } } | undefined)?.cause;
  return error.code === 'unreachable' && cause?.code === 'ECONNREFUSED';
}

export function isRetryable(error: unknown, idempotent: boolean): boolean {
  if (!(error instanceof TailbaseError)) return false;
  if (error.status === 429 || REFUSED_CODES.has(error.code) || connectionRefused(error)) {
    return true;
  }
  if (!idempotent) return false;
  return error.status === 503;
}

/** The pause before retry number `retry` (1 for the first), bounded by backoffMsMax. */
export function backoffMs(policy: RetryPolicy, retry: number, random: () => number): number {
  const ceiling = Math.min(policy.backoffMsMax, policy.backoffMsFirst * 2 ** (retry - 1));
  return Math.round(random() * ceiling);
}

export function checkRetryPolicy(policy: RetryPolicy): RetryPolicy {
  const { attemptsMax, backoffMsFirst, backoffMsMax } = policy;
  if (!(Number.isInteger(attemptsMax) && attemptsMax >= 1)) {
    throw new RangeError('retry.attemptsMax must be an integer >= 1');
  }
  if (!(backoffMsFirst >= 0 && backoffMsMax >= backoffMsFirst)) {
    throw new RangeError('retry needs 0 <= backoffMsFirst <= backoffMsMax');
  }
  return policy;
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
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
