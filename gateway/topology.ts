/**
 * What the gateway knows of the serve-nodes: which partitions each hosts (from its
 * /internal/status, re-read every topologyRefreshMs), which are down, and how to pick a replica
 * for a partition (round-robin over the live ones) or one replica per partition for a fan-out.
 */
import { TailbaseError, unavailable } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import type { ServeClient, ServeReadLimits, ServeStatus } from '../shared/serve-client.js';

export interface ServeNode {
  /** The node's position in the configured list: a name that leaks no address. */
  index: number;
  client: ServeClient;
  status: ServeStatus | null;
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
}

function isUnreachable(error: unknown): boolean {
  return error instanceof TailbaseError && error.code === 'serve_unreachable';
}

export class ServeTopology {
  readonly nodes: ServeNode[];
  private readonly cursors: number[];
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
          node.hosted = new Set(status.partitions.map((p) => p.partition));
          node.downUntilMs = 0;
          node.lastError = null;
          this.checkLimits(node, status);
        } catch (error) {
          this.markDown(node, error);
        }
      }),
    );
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

  /** Replicas of a partition, rotated for spread, live ones first (down ones as a last resort). */
  replicas(partition: number): ServeNode[] {
    const hosting = this.nodes.filter((node) => node.hosted.has(partition));
    if (hosting.length === 0) {
      throw unavailable('partition_unavailable', `no serve-node hosts partition ${partition}`, {
        partition,
      });
    }
    const start = this.cursors[partition]++ % hosting.length;
    const rotated = [...hosting.slice(start), ...hosting.slice(0, start)];
    return [...rotated.filter((n) => this.isUp(n)), ...rotated.filter((n) => !this.isUp(n))];
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
      if (failed.length > 0 && failed.some((p) => this.candidates(p, excluded).length === 0)) {
        throw lastError;
      }
      remaining = failed;
    }
    return results;
  }

  private candidates(partition: number, excluded: Set<ServeNode>): ServeNode[] {
    return this.nodes.filter((node) => node.hosted.has(partition) && !excluded.has(node));
  }

  /** Greedy cover: nodes hosting the most still-unassigned partitions first, live before down. */
  private assign(partitions: number[], excluded: Set<ServeNode>): Map<ServeNode, number[]> {
    const plan = new Map<ServeNode, number[]>();
    const left = new Set(partitions);
    for (const partition of partitions) {
      if (this.candidates(partition, excluded).length === 0) {
        throw unavailable('partition_unavailable', `no serve-node hosts partition ${partition}`, {
          partition,
        });
      }
    }
    while (left.size > 0) {
      let best: ServeNode | null = null;
      let bestScore = -1;
      for (const node of this.nodes) {
        if (excluded.has(node)) continue;
        const covers = [...left].filter((p) => node.hosted.has(p)).length;
        const score = covers === 0 ? -1 : covers + (this.isUp(node) ? 1_000_000 : 0);
        if (score > bestScore) {
          best = node;
          bestScore = score;
        }
      }
      if (best === null) break;
      const assigned = [...left].filter((p) => best.hosted.has(p));
      assigned.forEach((p) => left.delete(p));
      plan.set(best, assigned);
    }
    return plan;
  }
}
