// Proves how the gateway picks replicas: reads of a partition hosted twice alternate between the
// two; a node found unreachable is tried last until nodeDownMs has passed, then shares again; an
// error that is not unreachability is the answer, not a reason to ask another replica; a replica
// that is rebuilding or far behind is used only when no better one is up. A node hosts partition
// numbers for every collection: it is a replica of them before any collection exists, and its
// standing sums what it trails over every collection it tails.
import { describe, expect, it } from 'vitest';
import { ServeTopology, type ServeNode } from '../../gateway/topology.js';
import { TailbaseError } from '../../shared/errors.js';
import { createLogger } from '../../shared/logger.js';
import { SETTINGS_TOPIC } from '../../shared/topics.js';
import type {
  PartitionState,
  ServeClient,
  ServePartitionStatus,
  ServeStatus,
} from '../../shared/serve-api.js';

const DOWN_MS = 1000;

/** A client whose status says it hosts `hosted` and tails no collection yet. */
function hosting(hosted: number[]): ServeClient {
  const status = { hostedPartitions: hosted, partitions: [] };
  return { status: async () => status as unknown as ServeStatus } as ServeClient;
}

/** A refreshed topology over `clients`, with a clock the test moves. */
async function topologyOver(clients: ServeClient[], partitions: number) {
  let now = 0;
  const nodes = new ServeTopology(clients, {
    partitions,
    refreshMs: 60_000,
    nodeDownMs: DOWN_MS,
    logger: createLogger('test', 'silent'),
    nowMs: () => now,
  });
  await nodes.refresh();
  return { nodes, advance: (ms: number) => (now += ms) };
}

const topology = () => topologyOver([hosting([0, 1]), hosting([0])], 2);

const unreachable = () => new TailbaseError(503, 'serve_unreachable', 'down');

describe('serve topology', () => {
  it('alternates the replicas of a partition and uses the only one of another', async () => {
    const { nodes } = await topology();
    const used: number[] = [];
    for (let i = 0; i < 10; i++) await nodes.onReplica(0, async (n) => used.push(n.index));
    expect(used.filter((i) => i === 0)).toHaveLength(5);
    expect(used.filter((i) => i === 1)).toHaveLength(5);
    const only: number[] = [];
    for (let i = 0; i < 4; i++) await nodes.onReplica(1, async (n) => only.push(n.index));
    expect(only).toEqual([0, 0, 0, 0]);
  });

  it('moves past an unreachable node, tries it last while down, and uses it again after', async () => {
    const { nodes, advance } = await topology();
    const calls: number[] = [];
    const failNode0 = async (n: ServeNode) => {
      calls.push(n.index);
      if (n.index === 0) throw unreachable();
      return n.index;
    };
    for (let i = 0; i < 4; i++) expect(await nodes.onReplica(0, failNode0)).toBe(1);
    // Node 0 failed once, then was only ever second in line, so never asked again.
    expect(calls.filter((i) => i === 0)).toHaveLength(1);
    expect(nodes.isUp(nodes.nodes[0])).toBe(false);
    advance(DOWN_MS + 1);
    const after: number[] = [];
    for (let i = 0; i < 4; i++) await nodes.onReplica(0, async (n) => after.push(n.index));
    expect(after.sort()).toEqual([0, 0, 1, 1]);
  });

  it('answers with an error that is not unreachability instead of asking another replica', async () => {
    const { nodes } = await topology();
    const calls: number[] = [];
    const refusal = new TailbaseError(400, 'invalid_query', 'bad');
    await expect(
      nodes.onReplica(0, async (n) => {
        calls.push(n.index);
        throw refusal;
      }),
    ).rejects.toBe(refusal);
    expect(calls).toHaveLength(1);
    expect(nodes.nodes.every((n) => nodes.isUp(n))).toBe(true);
  });

  it('when every replica is down, still tries them rather than failing without asking', async () => {
    const { nodes } = await topology();
    for (const node of nodes.nodes) nodes.markDown(node, unreachable());
    expect(await nodes.onReplica(1, async (n) => n.index)).toBe(0);
  });
});

/** One topic-partition as a serve-node's /internal/status reports it. */
function partitionStatus(
  partition: number,
  applied: number,
  logEndOffset: number,
  state: PartitionState,
  topic = 'books',
): ServePartitionStatus {
  const lag = Math.max(logEndOffset - applied, 0);
  return {
    topic,
    partition,
    applied,
    logEndOffset,
    lag,
    applyRatePerSec: 0,
    etaSeconds: lag === 0 ? 0 : null,
    state,
  };
}

/** A client answering whatever status `current` holds when the topology refreshes. */
function reporting(current: { status: ServeStatus }): ServeClient {
  return { status: async () => current.status } as ServeClient;
}

function serveStatus(nodeId: string, partitions: ServePartitionStatus[]): ServeStatus {
  const ready = partitions.every((p) => p.state === 'tailing');
  const hostedPartitions = [
    ...new Set(partitions.filter((p) => p.topic !== SETTINGS_TOPIC).map((p) => p.partition)),
  ];
  return { nodeId, clusterId: 'c', partitions, hostedPartitions, ready };
}

const caughtUp = (nodeId: string, hosted: number[]) =>
  serveStatus(
    nodeId,
    hosted.map((p) => partitionStatus(p, 40, 40, 'tailing')),
  );

const topologyOf = (statuses: { status: ServeStatus }[], partitions: number) =>
  topologyOver(statuses.map(reporting), partitions);

/** Which node each partition was read from in one fan-out. */
async function fanOutPlan(nodes: ServeTopology, partitions: number[]) {
  const runs = await nodes.fanOut(partitions, async (_node, assigned) => assigned);
  const plan: Record<number, number> = {};
  for (const { node, assigned } of runs) for (const p of assigned) plan[p] = node.index;
  return plan;
}

// Proves replica choice weighs what each node's status says: a node rebuilding (stores wiped,
// replaying from the log start; right after the admin call its lag still reads 0, as its log end
// is not known yet) or far behind answers only when no better replica is up, while replicas
// about as fresh as each other still share the reads.
describe('serve topology: rebuilding and lagging replicas', () => {
  it('reads from caught-up replicas, not from a node that is rebuilding', async () => {
    const whole = { status: caughtUp('all', [0, 1, 2, 3]) };
    const low = { status: caughtUp('low', [0, 1]) };
    const high = { status: caughtUp('high', [2, 3]) };
    const { nodes } = await topologyOf([whole, low, high], 4);
    // All caught up: the node hosting everything answers a fan-out alone.
    expect(await fanOutPlan(nodes, [0, 1, 2, 3])).toEqual({ 0: 0, 1: 0, 2: 0, 3: 0 });

    whole.status = serveStatus(
      'all',
      [0, 1, 2, 3].map((p) => partitionStatus(p, 0, 0, 'rebuilding')),
    );
    await nodes.refresh();
    expect(await fanOutPlan(nodes, [0, 1, 2, 3])).toEqual({ 0: 1, 1: 1, 2: 2, 3: 2 });
    const used: number[] = [];
    for (let i = 0; i < 6; i++) await nodes.onReplica(0, async (n) => used.push(n.index));
    expect(used).toEqual([1, 1, 1, 1, 1, 1]);

    // Once its replay reaches the log end it shares the reads again.
    whole.status = caughtUp('all', [0, 1, 2, 3]);
    await nodes.refresh();
    const after: number[] = [];
    for (let i = 0; i < 4; i++) await nodes.onReplica(0, async (n) => after.push(n.index));
    expect(after.sort()).toEqual([0, 0, 1, 1]);
  });

  it('prefers the replica with the least lag, and uses a lagging one only as a fallback', async () => {
    const behind = {
      status: serveStatus('behind', [partitionStatus(0, 100, 5_000, 'replaying')]),
    };
    const fresh = { status: caughtUp('fresh', [0]) };
    const { nodes, advance } = await topologyOf([behind, fresh], 1);
    const used: number[] = [];
    for (let i = 0; i < 4; i++) await nodes.onReplica(0, async (n) => used.push(n.index));
    expect(used).toEqual([1, 1, 1, 1]);
    expect(await fanOutPlan(nodes, [0])).toEqual({ 0: 1 });

    // The fresh one unreachable: the lagging one answers, and is asked first while it is down.
    const calls: number[] = [];
    const failFresh = async (n: ServeNode) => {
      calls.push(n.index);
      if (n.index === 1) throw unreachable();
      return n.index;
    };
    for (let i = 0; i < 3; i++) expect(await nodes.onReplica(0, failFresh)).toBe(0);
    expect(calls).toEqual([1, 0, 0, 0]);
    expect(await fanOutPlan(nodes, [0])).toEqual({ 0: 0 });
    advance(DOWN_MS + 1);
    expect(await nodes.onReplica(0, async (n) => n.index)).toBe(1);
  });

  it('ranks by applied offsets too: a node whose log reads fail trails though its lag reads 0', async () => {
    const stuck = {
      status: serveStatus('stuck', [
        { ...partitionStatus(0, 100, 100, 'replaying'), error: 'log-node unreachable' },
      ]),
    };
    const moving = { status: serveStatus('moving', [partitionStatus(0, 9_000, 9_000, 'tailing')]) };
    const { nodes } = await topologyOf([stuck, moving], 1);
    const used: number[] = [];
    for (let i = 0; i < 4; i++) await nodes.onReplica(0, async (n) => used.push(n.index));
    expect(used).toEqual([1, 1, 1, 1]);
  });

  it('spreads reads over replicas whose lags differ by a few records', async () => {
    const a = { status: serveStatus('a', [partitionStatus(0, 97, 100, 'tailing')]) };
    const b = { status: serveStatus('b', [partitionStatus(0, 100, 100, 'tailing')]) };
    const { nodes } = await topologyOf([a, b], 1);
    const used: number[] = [];
    for (let i = 0; i < 6; i++) await nodes.onReplica(0, async (n) => used.push(n.index));
    expect(used.sort()).toEqual([0, 0, 0, 1, 1, 1]);
  });

  it('still reads from a rebuilding node when it is the only one hosting a partition', async () => {
    const rebuilding = {
      status: serveStatus(
        'r',
        [0, 1].map((p) => partitionStatus(p, 3, 50, 'rebuilding')),
      ),
    };
    const other = { status: caughtUp('o', [0]) };
    const { nodes } = await topologyOf([rebuilding, other], 2);
    expect(await nodes.onReplica(1, async (n) => n.index)).toBe(0);
    expect(await fanOutPlan(nodes, [0, 1])).toEqual({ 0: 1, 1: 0 });
  });

  it('sums what a replica trails over every collection, and ignores the settings topic', async () => {
    // Caught up on books, far behind on users: behind overall.
    const split = {
      status: serveStatus('split', [
        partitionStatus(0, 40, 40, 'tailing', 'books'),
        partitionStatus(0, 10, 5_000, 'replaying', 'users'),
      ]),
    };
    // Caught up on both, far behind on the settings topic, which does not rank replicas.
    const even = {
      status: serveStatus('even', [
        partitionStatus(0, 40, 40, 'tailing', 'books'),
        partitionStatus(0, 5_000, 5_000, 'tailing', 'users'),
        partitionStatus(0, 0, 5_000, 'replaying', SETTINGS_TOPIC),
      ]),
    };
    const { nodes } = await topologyOf([split, even], 1);
    const used: number[] = [];
    for (let i = 0; i < 4; i++) await nodes.onReplica(0, async (n) => used.push(n.index));
    expect(used).toEqual([1, 1, 1, 1]);
  });

  it('routes to the hosts of a partition before any collection exists', async () => {
    const { nodes } = await topologyOver([hosting([0]), hosting([1])], 2);
    expect(await fanOutPlan(nodes, [0, 1])).toEqual({ 0: 0, 1: 1 });
  });
});
