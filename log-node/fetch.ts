/**
 * A multi-partition read, as Kafka's fetch: a serve-node asks for all the topic-partitions it
 * tails from this node in one call. Each is read as the log contract's `read` would, and fails
 * alone (its error is in the answer); when none has anything yet, the call long-polls until an
 * append to any of them is durable.
 */
import { TailbaseError } from '../shared/errors.js';
import type { FetchOutcome } from '../shared/fetch-answer.js';
import type { FetchPosition } from '../shared/log-api.js';
import type { LogNode } from './log-node.js';
import { waitForAny } from './waiters.js';

export async function fetchPartitions(
  node: LogNode,
  positions: readonly FetchPosition[],
  maxBytes: number,
  waitMs: number,
  signal?: AbortSignal,
): Promise<FetchOutcome[]> {
  const outcomes = await readAll(node, positions, maxBytes);
  const idle = outcomes.every((outcome) => !('error' in outcome) && outcome.batches.length === 0);
  if (!idle || waitMs === 0 || node.closing) return outcomes;
  const logs = positions.map(({ topic, partition }) => node.partition(topic, String(partition)));
  const release = node.admitLongPoll();
  try {
    await waitForAny(
      logs.map((log) => log.waiters),
      waitMs,
      signal,
    );
  } finally {
    release();
  }
  return readAll(node, positions, maxBytes);
}

function readAll(node: LogNode, positions: readonly FetchPosition[], maxBytes: number) {
  return Promise.all(
    positions.map(async ({ topic, partition, offset }): Promise<FetchOutcome> => {
      try {
        const read = await node.partition(topic, String(partition)).read(offset, maxBytes, 0);
        return { topic, partition, ...read };
      } catch (error) {
        if (!(error instanceof TailbaseError)) throw error;
        return { topic, partition, error };
      }
    }),
  );
}
