/**
 * The gateway's own bound on a read's wait. A serve-node answers a wait it cannot meet with 504
 * `not_caught_up` when its timer fires, but that timer runs on the thread that applies the log:
 * during a bulk load one apply transaction held it for seconds (a strong read with wait_ms=300
 * answered after 5.3 s, README.md), and an HTTP answer may be slow for other reasons.
 * So the edge holds a deadline of its own, `waitMs + waitSlackMs` after the read began, and past
 * it answers the 504 itself, naming a partition the read waited for and its offsets, whether or
 * not the serve-node has answered. The call is cancelled (its waiter freed on the node); an
 * answer arriving later is dropped, so a 504 never turns into a stale 200.
 */
import { TailbaseError } from '../shared/errors.js';
import type { ServeReadOptions } from '../shared/serve-api.js';
import { SETTINGS_TOPIC } from '../shared/topics.js';
import type { ServeNode } from './topology.js';

export interface WaitBound {
  /** The wait_ms the client asked for (or the default). */
  waitMs: number;
  /** performance.now() when the read began: its wait ends waitMs after it. */
  startedMs: number;
  /** How long past the wait the edge gives a serve-node's own 504 to arrive. */
  slackMs: number;
}

/**
 * Runs `read` on `node` with what is left of the wait; 504 `not_caught_up` once the wait and its
 * slack are over. A read that waits for nothing runs unbounded here (its own bounds apply).
 */
export function withinWait<T>(
  bound: WaitBound,
  collection: string,
  node: ServeNode,
  options: ServeReadOptions,
  read: (options: ServeReadOptions) => Promise<T>,
): Promise<T> {
  const waitFor = options.waitFor ?? {};
  if (Object.keys(waitFor).length === 0 && options.settingsWaitFor === undefined) {
    return read(options);
  }
  return beforeBound(
    bound,
    (deadline) =>
      read({
        ...options,
        waitMs: Math.max(Math.floor(bound.startedMs + bound.waitMs - performance.now()), 0),
        signal: options.signal ? AbortSignal.any([options.signal, deadline]) : deadline,
      }),
    () => notCaughtUpAtEdge(bound.waitMs, collection, node, options),
  );
}

/**
 * Runs `work` until the wait and its slack are over; then aborts the signal it was given and
 * fails with `timedOut()`, whatever `work` answers later.
 */
export async function beforeBound<T>(
  bound: WaitBound,
  work: (deadline: AbortSignal) => Promise<T>,
  timedOut: () => TailbaseError,
): Promise<T> {
  const leftMs = bound.startedMs + bound.waitMs - performance.now();
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => {
        // On a timer: whatever building the answer throws must reach the request, not end the
        // process.
        let error: unknown;
        try {
          error = timedOut();
        } catch (thrown) {
          error = thrown;
        }
        controller.abort(error);
        reject(error);
      },
      Math.max(leftMs, 0) + bound.slackMs,
    );
  });
  try {
    return await Promise.race([work(controller.signal), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The 504 the edge answers: the first partition (or the settings topic) the node had not applied
 * at its last status, else the first waited for, with the applied offset of that status.
 */
function notCaughtUpAtEdge(
  waitMs: number,
  collection: string,
  node: ServeNode,
  options: ServeReadOptions,
): TailbaseError {
  const statusOf = (topic: string, partition: number) =>
    node.status?.partitions.find((p) => p.topic === topic && p.partition === partition)?.applied;
  const needs = Object.entries(options.waitFor ?? {}).map(([partition, required]) => ({
    topic: collection,
    partition: Number(partition),
    required,
  }));
  if (options.settingsWaitFor !== undefined) {
    needs.push({ topic: SETTINGS_TOPIC, partition: 0, required: options.settingsWaitFor });
  }
  const need =
    needs.find(({ topic, partition, required }) => (statusOf(topic, partition) ?? 0) <= required) ??
    needs[0];
  const applied = statusOf(need.topic, need.partition);
  return new TailbaseError(
    504,
    'not_caught_up',
    `${need.topic} partition ${need.partition}: offset ${need.required} not applied within ${waitMs} ms ` +
      `(serve-node ${node.index} did not answer in time; applied is as of its last status)`,
    {
      topic: need.topic,
      partition: need.partition,
      ...(applied === undefined ? {} : { applied }),
      required: need.required,
    },
  );
}
