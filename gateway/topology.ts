/**
 * What the gateway knows of the serve-nodes: which partitions each hosts (the same numbers for
 * every collection) and how fresh each copy is (from its /internal/status, re-read every
 * topologyRefreshMs), which are down, and how to pick a replica for a partition (round-robin over
 * the live ones of the freshest tier) or one replica per partition for a fan-out.
 */
import { TailbaseError, unavailable } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import { isCollectionTopic } from '../shared/topics.js';
import type {
  ServeClient,
  ServePartitionStatus,
  ServeReadLimits,
  ServeStatus,
} from '../shared/serve-api.js';

export interface ServeNode {
  /** The node's position in the configured list: a name that leaks no address. */
  index: number;
  client: ServeClient;
  status: ServeStatus | null;
  /** The partition numbers it hosts, of every collection. */
  hosted: Set<number>;
  downUntilMs: number;
  lastError: string | null;
  /** Where the gateway's limits pass this node's (from its last status), e.g. a larger scan limit. */
  limitConflicts: string[];
}

export interface TopologyOptions {
  partitions: number;
  refreshMs: number;
  nodeDownMs: number;
  logger: Logger;
  nowMs?: () => number;
  /** The gateway's limits that a node's read limits do not allow (none by default). */
  limitConflicts?: (limits: ServeReadLimits) => string[];
  /** Replicas of a partition this many records apart or fewer are equally good (default below). */
  replicaLagRecordsEqualMax?: number;
}

/**
 * Healthy replicas of a partition differ by what each applied between the moments their statuses
 * were read (and a serve-node lingers applyLingerMs before applying), hundreds of records under
 * load; within this bound they share reads rather than one taking them all until the next
 * refresh. The same as the serve-node's default readyLagMax: as far behind as a node counts as
 * caught up.
 */
export const REPLICA_LAG_RECORDS_EQUAL_MAX = 1_000;

/** How fresh one node's copy of a partition is, over every collection, as its last status told. */
interface Standing {
  node: ServeNode;
  /** Its stores were wiped and are being replayed from the log start. */
  rebuilding: boolean;
  /**
   * Records behind, summed over the collections: per collection its own lag, or how far it trails
   * the replica that has applied the most of it.
   */
  behindRecords: number;
}

/**
 * A rebuilding node's lag reads 0 until its first log read tells it the log end, so the state says
 * it is rebuilding ('stopped' is the moment between dropping the old stores and tailing into the
 * new ones).
 */
function isRebuilding(partition: ServePartitionStatus): boolean {
  return partition.state === 'rebuilding' || partition.state === 'stopped';
}

function isUnreachable(error: unknown): boolean {
  return error instanceof TailbaseError && error.code === 'serve_unreachable';
}

export class ServeTopology {
  readonly nodes: ServeNode[];
  private readonly cursors: number[];
  /**
   * Per partition, its hosts grouped best first (caught up before behind before rebuilding);
   * computed at each refresh so that choosing a replica stays cheap per request.
   */
  private tiers: ServeNode[][][];
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private readonly now: () => number;

  constructor(
    clients: ServeClient[],
    private readonly options: TopologyOptions,
  ) {
    this.nodes = clients.map((client, index) => ({
      index,
      client,
      status: null,
      hosted: new Set<number>(),
      downUntilMs: 0,
      lastError: null,
      limitConflicts: [],
    }));
    this.cursors = new Array<number>(options.partitions).fill(0);
    this.tiers = Array.from({ length: options.partitions }, () => []);
    this.now = options.nowMs ?? Date.now;
  }

  start(): void {
    const tick = () => {
      if (this.stopped) return;
      this.timer = setTimeout(() => void this.refresh().finally(tick), this.options.refreshMs);
      this.timer.unref();
    };
    tick();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  async refresh(): Promise<void> {
    await Promise.all(
      this.nodes.map(async (node) => {
        try {
          const status = await node.client.status();
          node.status = status;
          node.hosted = new Set(status.hostedPartitions);
          node.downUntilMs = 0;
          node.lastError = null;
          this.checkLimits(node, status);
        } catch (error) {
          this.markDown(node, error);
        }
      }),
    );
    this.rankReplicas();
  }

  /**
   * Orders each partition's hosts: not rebuilding first, then by records behind; hosts within
   * replicaLagRecordsEqualMax of the best of their tier share it. A node whose status could not be
   * read keeps the standing of its last one (and is down, so it comes last anyway).
   */
  private rankReplicas(): void {
    const equalMax = this.options.replicaLagRecordsEqualMax ?? REPLICA_LAG_RECORDS_EQUAL_MAX;
    const reported: { node: ServeNode; partition: ServePartitionStatus }[][] = Array.from(
      { length: this.options.partitions },
      () => [],
    );
    /** Per partition and collection, the most any replica applied of it. */
    const appliedMax: Map<string, number>[] = reported.map(() => new Map());
    for (const node of this.nodes) {
      for (const partition of node.status?.partitions ?? []) {
        const most = appliedMax[partition.partition];
        if (most === undefined || !isCollectionTopic(partition.topic)) continue;
        reported[partition.partition].push({ node, partition });
        // Older serve-nodes may leave out applied, lag or state: such a copy counts as caught up.
        const applied = Math.max(most.get(partition.topic) ?? 0, partition.applied ?? 0);
        most.set(partition.topic, applied);
      }
    }
    this.tiers = reported.map((entries, p) => {
      const byNode = new Map<ServeNode, Standing>();
      for (const { node, partition } of entries) {
        const standing = byNode.get(node) ?? { node, rebuilding: false, behindRecords: 0 };
        standing.rebuilding ||= isRebuilding(partition);
        standing.behindRecords += Math.max(
          partition.lag ?? 0,
          partition.applied === undefined
            ? 0
            : (appliedMax[p].get(partition.topic) ?? 0) - partition.applied,
        );
        byNode.set(node, standing);
      }
      // A host that tails no collection of this partition yet (none exists) is as good as any.
      for (const node of this.nodes) {
        if (node.hosted.has(p) && !byNode.has(node)) {
          byNode.set(node, { node, rebuilding: false, behindRecords: 0 });
        }
      }
      const standings = [...byNode.values()];
      standings.sort(
        (a, b) => Number(a.rebuilding) - Number(b.rebuilding) || a.behindRecords - b.behindRecords,
      );
      const tiers: ServeNode[][] = [];
      let first: Standing | null = null;
      for (const standing of standings) {
        if (
          first === null ||
          standing.rebuilding !== first.rebuilding ||
          standing.behindRecords - first.behindRecords > equalMax
        ) {
          first = standing;
          tiers.push([]);
        }
        tiers[tiers.length - 1].push(standing.node);
      }
      return tiers;
    });
  }

  /** Records where the gateway's limits pass the node's, warning once each time they change. */
  private checkLimits(node: ServeNode, status: ServeStatus): void {
    const conflicts =
      status.limits && this.options.limitConflicts
        ? this.options.limitConflicts(status.limits)
        : [];
    if (conflicts.join('\n') !== node.limitConflicts.join('\n') && conflicts.length > 0) {
      this.options.logger.warn(
        { node: node.index, conflicts },
        "the gateway's limits pass this serve-node's: some requests it accepts will be refused",
      );
    }
    node.limitConflicts = conflicts;
  }

  markDown(node: ServeNode, error: unknown): void {
    if (node.downUntilMs < this.now()) {
      this.options.logger.warn({ node: node.index, err: error }, 'serve-node marked down');
    }
    node.downUntilMs = this.now() + this.options.nodeDownMs;
    node.lastError = error instanceof Error ? error.message : String(error);
  }

  isUp(node: ServeNode): boolean {
    return node.downUntilMs <= this.now();
  }

  /**
   * Replicas of a partition, best tier first and rotated within each tier for spread; live ones
   * before down ones (a last resort), so a rebuilding or lagging node is asked only when no
   * fresher one is up.
   */
  replicas(partition: number): ServeNode[] {
    const tiers = this.tiers[partition] ?? [];
    if (tiers.length === 0) {
      throw unavailable('partition_unavailable', `no serve-node hosts partition ${partition}`, {
        partition,
      });
    }
    const turn = this.cursors[partition]++;
    const up: ServeNode[] = [];
    const down: ServeNode[] = [];
    for (const tier of tiers) {
      for (let i = 0; i < tier.length; i++) {
        const node = tier[(turn + i) % tier.length];
        (this.isUp(node) ? up : down).push(node);
      }
    }
    return [...up, ...down];
  }

  /** Runs `call` on a replica of the partition, moving to the next one when a node is unreachable. */
  async onReplica<T>(partition: number, call: (node: ServeNode) => Promise<T>): Promise<T> {
    let lastError: unknown;
    for (const node of this.replicas(partition)) {
      try {
        return await call(node);
      } catch (error) {
        if (!isUnreachable(error)) throw error;
        this.markDown(node, error);
        lastError = error;
      }
    }
    throw lastError;
  }

  /**
   * Runs `call` once per chosen node with the partitions assigned to it, so every partition is
   * covered by exactly one replica; a node found unreachable has its partitions reassigned.
   */
  async fanOut<T>(
    partitions: number[],
    call: (node: ServeNode, assigned: number[]) => Promise<T>,
  ): Promise<{ node: ServeNode; assigned: number[]; result: T }[]> {
    const excluded = new Set<ServeNode>();
    const results: { node: ServeNode; assigned: number[]; result: T }[] = [];
    let remaining = partitions;
    for (let round = 0; remaining.length > 0; round++) {
      const plan = this.assign(remaining, excluded);
      const failed: number[] = [];
      let lastError: unknown;
      await Promise.all(
        [...plan].map(async ([node, assigned]) => {
          try {
            results.push({ node, assigned, result: await call(node, assigned) });
          } catch (error) {
            if (!isUnreachable(error) || round >= this.nodes.length) throw error;
            this.markDown(node, error);
            excluded.add(node);
            failed.push(...assigned);
            lastError = error;
          }
        }),
      );
      if (failed.length > 0 && failed.some((p) => this.preferred(p, excluded).length === 0)) {
        throw lastError;
      }
      remaining = failed;
    }
    return results;
  }

  /**
   * The replicas a partition would rather be read from: the live ones of its best tier that has
   * any; failing that, the down ones of its best tier. Empty when every host is excluded.
   */
  private preferred(partition: number, excluded: Set<ServeNode>): ServeNode[] {
    const tiers = this.tiers[partition] ?? [];
    for (const up of [true, false]) {
      for (const tier of tiers) {
        const fit = tier.filter((node) => !excluded.has(node) && this.isUp(node) === up);
        if (fit.length > 0) return fit;
      }
    }
    return [];
  }

  /**
   * Greedy cover: each partition goes to one of its preferred replicas, nodes preferred by the
   * most still-unassigned partitions first (fewer calls), so a node that hosts everything but is
   * rebuilding or behind is passed over for fresher ones that host a part each.
   */
  private assign(partitions: number[], excluded: Set<ServeNode>): Map<ServeNode, number[]> {
    const plan = new Map<ServeNode, number[]>();
    const left = new Set(partitions);
    const preferred = new Map<number, ServeNode[]>();
    for (const partition of partitions) {
      const nodes = this.preferred(partition, excluded);
      if (nodes.length === 0) {
        throw unavailable('partition_unavailable', `no serve-node hosts partition ${partition}`, {
          partition,
        });
      }
      preferred.set(partition, nodes);
    }
    const prefers = (partition: number, node: ServeNode) =>
      (preferred.get(partition) as ServeNode[]).includes(node);
    while (left.size > 0) {
      let best: ServeNode | null = null;
      let bestCovers = 0;
      for (const node of this.nodes) {
        if (excluded.has(node)) continue;
        const covers = [...left].filter((p) => prefers(p, node)).length;
        if (covers > bestCovers) {
          best = node;
          bestCovers = covers;
        }
      }
      if (best === null) break;
      const assigned = [...left].filter((p) => prefers(p, best));
      assigned.forEach((p) => left.delete(p));
      plan.set(best, assigned);
    }
    return plan;
  }
}
