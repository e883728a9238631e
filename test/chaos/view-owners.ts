/**
 * Which serve-node of the cluster runs each view, as the serve-nodes say it: each member logs the
 * tasks it was dealt after every rebalance (`view tasks of this member`, views/view-placement.ts;
 * a task is `<view>@<version>`). The gateway's GET /v1/views does not name the member, and the
 * log-node serves no DescribeGroups, so the nemesis aims at a view's owner from these lines.
 * A node's tasks are forgotten when it restarts (a new member), and a task dealt to another
 * process than the one that last held it is a move, counted per view. Each task runs in one place:
 * within one generation of the group (of one run of the log-node, whose coordinator forgets
 * generations when it restarts) no two members are dealt the same task.
 */
import { now } from './history.js';
import type { ChaosNode } from './nodes.js';

/** What is followed of a node (a ChaosNode's): its lines, whether it runs, its restarts. */
export type WatchedNode = Pick<ChaosNode, 'name' | 'alive' | 'paused' | 'starts' | 'onLine'>;

/** One assignment a member logged. */
export interface Dealt {
  node: string;
  /** The node's start it came from: a restarted node is a new member. */
  start: number;
  /** When it was heard, on the history's clock. */
  atMs: number;
  /** The group's generation it was dealt in, and the coordinator's run (the log-node's start). */
  generation: number;
  coordinatorStart: number;
  tasks: string[];
}

/** One claim of a view (a run of its task) a member logged: the epoch its records carry. */
export interface Claimed {
  node: string;
  start: number;
  atMs: number;
  view: string;
  topic: string;
  epoch: number;
}

const viewOf = (task: string) => task.slice(0, task.lastIndexOf('@'));

export class ViewOwners<N extends WatchedNode = ChaosNode> {
  readonly dealt: Dealt[] = [];
  readonly claims: Claimed[] = [];
  /** Per view: how many times its task went to another process than the one that held it. */
  readonly moves: Record<string, number> = {};
  /** Per view: of those, the moves to another serve-node (not a restart of the same one). */
  readonly movesAcross: Record<string, number> = {};
  /** By node name: its latest assignment. */
  private readonly latest = new Map<string, Dealt>();
  /** By task: the process that held it last. */
  private readonly holders = new Map<string, { node: string; start: number }>();

  constructor(
    private readonly nodes: readonly N[],
    private readonly coordinator: Pick<WatchedNode, 'starts'>,
  ) {
    for (const node of nodes) node.onLine((line) => this.heard(node, line));
  }

  /**
   * The running, unpaused serve-node whose latest assignment holds a task of `view`; when two
   * do (one not yet told it lost it), the one dealt it last. Null while none is known.
   */
  ownerOf(view: string): N | null {
    let owner: { node: N; atMs: number } | null = null;
    for (const node of this.nodes) {
      const dealt = this.latest.get(node.name);
      if (!node.alive || node.paused || dealt === undefined || dealt.start !== node.starts) {
        continue;
      }
      if (!dealt.tasks.some((task) => viewOf(task) === view)) continue;
      if (owner === null || dealt.atMs > owner.atMs) owner = { node, atMs: dealt.atMs };
    }
    return owner?.node ?? null;
  }

  /**
   * Whether every running serve-node is a member of the same generation of the group, as its
   * latest assignment since it started says: a node paused then has a member to hand its views
   * to, rather than one still rejoining (whose rebalance the sleeper would hold up).
   */
  settled(): boolean {
    const generations = new Set<number>();
    for (const node of this.nodes) {
      if (!node.alive) continue;
      const dealt = this.latest.get(node.name);
      if (dealt === undefined || dealt.start !== node.starts) return false;
      generations.add(dealt.generation);
    }
    return generations.size === 1;
  }

  /** Whether a task of `view` was dealt to a serve-node other than `node` in [fromMs, toMs]. */
  movedAway(view: string, node: string, fromMs: number, toMs: number): boolean {
    return this.dealt.some(
      (d) =>
        d.node !== node &&
        d.atMs >= fromMs &&
        d.atMs <= toMs &&
        d.tasks.some((task) => viewOf(task) === view),
    );
  }

  /** Tasks dealt to two members in one generation: `task`, the generation, the members. */
  dealtTwice(): string[] {
    const holders = new Map<string, Set<string>>();
    for (const d of this.dealt) {
      for (const task of d.tasks) {
        const at = `${task} in generation ${d.generation} of coordinator run ${d.coordinatorStart}`;
        holders.set(at, (holders.get(at) ?? new Set()).add(`${d.node} (start ${d.start})`));
      }
    }
    return [...holders]
      .filter(([, members]) => members.size > 1)
      .map(([at, members]) => `${at}: ${[...members].join(', ')}`);
  }

  /** What the members said, in order: for a report that has to explain an anomaly. */
  timeline(): { atMs: number; text: string }[] {
    return [
      ...this.dealt.map((d) => ({
        atMs: d.atMs,
        text: `${d.node} (start ${d.start}) dealt [${d.tasks.join(' ')}] in generation ${d.generation}`,
      })),
      ...this.claims.map((c) => ({
        atMs: c.atMs,
        text: `${c.node} (start ${c.start}) claimed ${c.view} (topic ${c.topic}) at epoch ${c.epoch}`,
      })),
    ];
  }

  private heard(node: N, line: string): void {
    if (line.includes('"view claimed"')) {
      this.claimed(node, line);
      return;
    }
    if (!line.includes('"view tasks of this member"')) return;
    let said: { tasks?: unknown; generation?: unknown };
    try {
      said = JSON.parse(line) as typeof said;
    } catch {
      return;
    }
    const { tasks, generation } = said;
    if (!Array.isArray(tasks) || typeof generation !== 'number') return;
    const dealt: Dealt = {
      node: node.name,
      start: node.starts,
      atMs: now(),
      generation,
      coordinatorStart: this.coordinator.starts,
      tasks: tasks.filter((t): t is string => typeof t === 'string'),
    };
    this.dealt.push(dealt);
    this.latest.set(node.name, dealt);
    for (const task of dealt.tasks) {
      const before = this.holders.get(task);
      if (before !== undefined && (before.node !== node.name || before.start !== node.starts)) {
        const view = viewOf(task);
        this.moves[view] = (this.moves[view] ?? 0) + 1;
        if (before.node !== node.name) {
          this.movesAcross[view] = (this.movesAcross[view] ?? 0) + 1;
        }
      }
      this.holders.set(task, { node: node.name, start: node.starts });
    }
  }

  private claimed(node: N, line: string): void {
    try {
      const { view, topic, epoch } = JSON.parse(line) as Partial<Claimed>;
      if (typeof view !== 'string' || typeof topic !== 'string' || typeof epoch !== 'number')
        return;
      this.claims.push({ node: node.name, start: node.starts, atMs: now(), view, topic, epoch });
    } catch {
      // Not a JSON line: nothing claimed.
    }
  }
}
