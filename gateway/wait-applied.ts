/**
 * `wait=applied` on a write (Elasticsearch's `refresh=wait_for`): the answer waits until every
 * serve-node hosting the write's partitions has applied it, for clients that cannot carry a
 * token. The wait is a one-document scan of those partitions on each such node with the write's
 * offsets as its token, so it is the token read's own wait (bounded by `wait_ms`, the same 504
 * `not_caught_up`) and needs nothing new of the serve-nodes. Nodes the gateway holds down are
 * left out, as reads leave them out, unless no node of a partition is up.
 */
import { TailbaseError, badRequest } from '../shared/errors.js';
import type { WaitFor } from '../shared/serve-api.js';
import { WRITE_WAITS } from './api/constants.js';
import type { GatewayServices } from './services.js';
import type { ServeNode } from './topology.js';
import { intParam } from './validation.js';
import { withinWait, type WaitBound } from './wait-deadline.js';

/** How long a write asked to wait for its apply may wait; undefined when it did not ask. */
export function parseApplyWait(
  query: Map<string, string>,
  services: GatewayServices,
): number | undefined {
  const { limits } = services.config;
  const wait = query.get('wait');
  if (wait === undefined) {
    if (query.has('wait_ms')) {
      throw badRequest('invalid_parameter', 'wait_ms bounds wait=applied: send both or neither', {
        parameter: 'wait_ms',
      });
    }
    return undefined;
  }
  if (!(WRITE_WAITS as readonly string[]).includes(wait)) {
    throw badRequest('invalid_parameter', `wait must be one of ${WRITE_WAITS.join(', ')}`, {
      parameter: 'wait',
    });
  }
  return intParam(query, 'wait_ms', 0, limits.waitMsMax, limits.waitMsDefault);
}

export interface AppliedTarget {
  collection: string;
  /** Partition of the collection's topic → the highest offset written there. */
  offsets: ReadonlyMap<number, number>;
  /** The settings topic's offset written, for a settings write: every serve-node applies it. */
  settingsOffset?: number;
  /** The write's token, in the 504's details so a client that gets it can still read its write. */
  token: string;
}

/** Resolves once every hosting serve-node applied the write; 504 `not_caught_up` after waitMs. */
export async function waitApplied(
  services: GatewayServices,
  target: AppliedTarget,
  waitMs: number,
): Promise<void> {
  const { topology } = services;
  // Settings are in effect for reads of every partition: each has a host that must apply them.
  const partitions =
    target.settingsOffset === undefined
      ? [...target.offsets.keys()]
      : Array.from({ length: services.cluster.partitions }, (_, p) => p);
  const hosts = topology.nodes.filter((node) => partitions.some((p) => node.hosted.has(p)));
  // A partition no live node hosts is waited for on its down hosts: their failure answers.
  const uncovered = partitions.filter(
    (p) => !hosts.some((node) => node.hosted.has(p) && topology.isUp(node)),
  );
  const chosen = hosts.filter(
    (node) => topology.isUp(node) || uncovered.some((p) => node.hosted.has(p)),
  );
  const bound = {
    waitMs,
    startedMs: performance.now(),
    slackMs: services.config.limits.waitSlackMs,
  };
  const outcomes = await Promise.allSettled(chosen.map((node) => waitOnNode(node, target, bound)));
  const behind: Record<string, unknown>[] = [];
  for (const [i, outcome] of outcomes.entries()) {
    if (outcome.status === 'fulfilled') continue;
    const error = outcome.reason;
    if (!(error instanceof TailbaseError && error.code === 'not_caught_up')) throw error;
    behind.push({ node: chosen[i].index, ...error.details });
  }
  if (behind.length > 0) {
    throw new TailbaseError(
      504,
      'not_caught_up',
      `the write is stored, but ${behind.length} serve-node(s) did not apply it within ${waitMs} ms`,
      { behind, token: target.token },
    );
  }
}

/** The wait on one node, bounded at the edge as a read's is (wait-deadline.ts). */
function waitOnNode(node: ServeNode, target: AppliedTarget, bound: WaitBound) {
  const waitFor: Record<number, number> = {};
  for (const [p, offset] of target.offsets) if (node.hosted.has(p)) waitFor[p] = offset;
  const partitions = Object.keys(waitFor).map(Number);
  const wait = {
    waitFor: waitFor satisfies WaitFor,
    settingsWaitFor: target.settingsOffset,
    waitMs: bound.waitMs,
  };
  return withinWait(bound, target.collection, node, wait, (options) =>
    node.client.scan(target.collection, {
      limit: 1,
      // A settings write names no partition: one of the node's own carries its wait.
      partitions: partitions.length > 0 ? partitions : [Math.min(...node.hosted)],
      ...options,
    }),
  );
}
