// Proves how the gateway picks replicas: reads of a partition hosted twice alternate between the
// two; a node found unreachable is tried last until nodeDownMs has passed, then shares again; an
// error that is not unreachability is the answer, not a reason to ask another replica.
import { describe, expect, it } from 'vitest';
import { ServeTopology, type ServeNode } from '../../gateway/topology.js';
import { TailbaseError } from '../../shared/errors.js';
import { createLogger } from '../../shared/logger.js';
import type { ServeClient, ServeStatus } from '../../shared/serve-client.js';

const DOWN_MS = 1000;

/** A client whose status says it hosts `hosted`; only status() is ever called here. */
function hosting(hosted: number[]): ServeClient {
  const status = { partitions: hosted.map((partition) => ({ partition })) };
  return { status: async () => status as unknown as ServeStatus } as ServeClient;
}

async function topology() {
  let now = 0;
  const nodes = new ServeTopology([hosting([0, 1]), hosting([0])], {
    partitions: 2,
    refreshMs: 60_000,
    nodeDownMs: DOWN_MS,
    logger: createLogger('test', 'silent'),
    nowMs: () => now,
  });
  await nodes.refresh();
  return { nodes, advance: (ms: number) => (now += ms) };
}

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
