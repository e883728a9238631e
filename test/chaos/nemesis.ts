/**
 * The nemeses: faults on a seeded schedule until stopped, or in quota mode (`kills`, `links`,
 * `pauses`) until every role attacked was killed (and paused), and every link cut or stalled, that
 * many times:
 * - `kill`: kill -9 of a node, restarted on the same data directory after a hold;
 * - `pause`: SIGSTOP, SIGCONT after a hold;
 * - `link`: a link between nodes (a proxy, test/harness/link-proxy.ts) cut or stalled, healed
 *   after a hold;
 * - `mixed`: each fault picks one of the above (links only on a target that has them);
 * - in quota mode, `viewFaults` times each, on a cluster whose serve-nodes process views: kill -9
 *   (and restart) the serve-node that runs a view, kill -9 the other one, and SIGSTOP the one
 *   that runs a view past the views group's session timeout, so the view moves while it sleeps
 *   and it wakes to find it gone (views/README.md, Placement and Fencing).
 * Every fault is recorded as a window on the history's clock, so the report can say which
 * operations ran inside which fault.
 */
import type { Random } from '../harness/random.js';
import { now } from './history.js';
import { VIEW_SESSION_TIMEOUT_MS, type ChaosLink, type ChaosNode, type Target } from './nodes.js';

export type NemesisKind = 'kill' | 'pause' | 'link' | 'mixed';
export const NEMESIS_KINDS: NemesisKind[] = ['kill', 'pause', 'link', 'mixed'];

export type FaultKind = 'kill' | 'pause' | 'cut' | 'stall';

export interface FaultWindow {
  fault: FaultKind;
  /** The node's or the link's name. */
  target: string;
  startMs: number;
  /** Infinity while the fault lasts. */
  endMs: number;
  link?: ChaosLink;
  /** A fault aimed at a view's processor: the view whose owner (or the other node) it hit. */
  view?: string;
}

/** Where the views run, for the faults aimed at them (view-owners.ts). */
export interface ViewTargets {
  views: readonly string[];
  ownerOf(view: string): ChaosNode | null;
  /** Whether every running serve-node is in the group's current generation. */
  settled(): boolean;
}

export interface NemesisOptions {
  kind: NemesisKind;
  /** Roles whose nodes may be killed or paused (all of the target's by default). */
  roles?: string[];
  /**
   * Quota mode, on a short schedule, then the nemesis is done: kill -9 each role attacked this
   * many times, cut or stall each link `links` times, and SIGSTOP each role `pauses` times (the
   * fault kind is then ignored). The pauses come after the kills and the link faults, so a seed
   * picks the same of those with or without them.
   */
  kills?: number;
  links?: number;
  pauses?: number;
  /** Quota mode: each of the faults aimed at a view's processor this many times. */
  viewFaults?: number;
  viewTargets?: ViewTargets;
}

export interface Nemesis {
  /** Faults injected, by kind and node role or link: "kill log-node" → count. */
  faults: Record<string, number>;
  windows: FaultWindow[];
  done: Promise<void>;
  stop(): void;
}

/** Waits between faults and how long each lasts, in ms: [min, max]. */
const BETWEEN_MS: [number, number] = [800, 3000];
const KILL_HOLD_MS: [number, number] = [0, 1500];
const PAUSE_HOLD_MS: [number, number] = [300, 4000];
/** Longer than the reads' default wait (5 s) at the top, so a stalled replica must answer 504. */
const LINK_HOLD_MS: [number, number] = [1000, 7000];
/** The quota schedule: short, so a hundred kill cycles a role fit in minutes. */
const QUOTA_BETWEEN_MS: [number, number] = [200, 1000];
const QUOTA_KILL_HOLD_MS: [number, number] = [0, 500];
/** A view owner's sleep: past its session, and the other member's rebalance after it. */
const OWNER_PAUSE_HOLD_MS: [number, number] = [
  VIEW_SESSION_TIMEOUT_MS + 3_000,
  VIEW_SESSION_TIMEOUT_MS + 5_000,
];
/** How long a fault aimed at a view waits for the group to name its owner (after a rebalance). */
const OWNER_WAIT_MS_MAX = 30_000;

/** The faults a nemesis picks from; `mixed` takes links only where the target has them. */
function faultKinds(kind: NemesisKind, links: boolean): FaultKind[] {
  switch (kind) {
    case 'kill':
    case 'pause':
      return [kind];
    case 'link':
      return ['cut', 'stall'];
    case 'mixed':
      return links ? ['kill', 'pause', 'cut', 'stall'] : ['kill', 'pause'];
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Which node of a view's a fault hits: the one that runs it, or the other serve-node. */
type ViewAim = 'view-owner' | 'view-other';

/** One fault to inject: on a node, on a link, or on the node a view's processing puts it on. */
type Step =
  | { fault: 'kill' | 'pause'; node: ChaosNode; link?: undefined; aim?: undefined }
  | { fault: 'cut' | 'stall'; link: ChaosLink; node?: undefined; aim?: undefined }
  | { fault: 'kill' | 'pause'; aim: ViewAim; view: string; node?: undefined; link?: undefined };

export function startNemesis(
  target: Target,
  random: Random,
  options: NemesisOptions,
  log: (line: string) => void,
): Nemesis {
  const faults: Record<string, number> = {};
  const windows: FaultWindow[] = [];
  let stopped = false;
  let wake: () => void = () => {};
  const nap = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  const victims = target.nodes.filter(
    (n) => options.roles === undefined || options.roles.includes(n.role),
  );
  const kinds = faultKinds(options.kind, target.links.length > 0);
  if (options.kind !== 'link' && victims.length === 0) {
    throw new Error(`no node of roles ${options.roles} to attack`);
  }
  if ((options.kind === 'link' || options.links !== undefined) && target.links.length === 0) {
    throw new Error('the target has no links to cut (use --target cluster)');
  }
  const count = (key: string) => (faults[key] = (faults[key] ?? 0) + 1);

  const linkFault = () => random.pick(['cut', 'stall'] as const);
  const roles = [...new Set(victims.map((n) => n.role))];
  /** Quota mode: the faults still owed, each role's kills and each link's faults. */
  const owed: { left: number; step: () => Step }[] = [
    ...roles.map((role) => ({
      left: options.kills ?? 0,
      step: (): Step => ({
        fault: 'kill',
        node: random.pick(victims.filter((n) => n.role === role)),
      }),
    })),
    ...target.links.map((link) => ({
      left: options.links ?? 0,
      step: (): Step => ({ fault: linkFault(), link }),
    })),
  ];
  /** Then each role's pauses. */
  const owedPauses = roles.map((role) => ({
    left: options.pauses ?? 0,
    step: (): Step => ({
      fault: 'pause',
      node: random.pick(victims.filter((n) => n.role === role)),
    }),
  }));
  const viewTargets = options.viewTargets;
  if (options.viewFaults !== undefined && viewTargets === undefined) {
    throw new Error('faults aimed at views need a target whose serve-nodes process them');
  }
  if (viewTargets !== undefined) {
    const aimed: { fault: 'kill' | 'pause'; aim: ViewAim }[] = [
      { fault: 'kill', aim: 'view-owner' },
      { fault: 'kill', aim: 'view-other' },
      { fault: 'pause', aim: 'view-owner' },
    ];
    for (const { fault, aim } of aimed) {
      owed.push({
        left: options.viewFaults ?? 0,
        step: (): Step => ({ fault, aim, view: random.pick([...viewTargets.views]) }),
      });
    }
  }
  const quota =
    options.kills !== undefined ||
    options.links !== undefined ||
    options.pauses !== undefined ||
    options.viewFaults !== undefined;

  /**
   * The node a fault aimed at a view hits, once the group names the view's owner (and, for a
   * pause, has every running serve-node in its current generation, so the view has somewhere
   * to move); or null.
   */
  const aimAt = async (step: Step & { aim: ViewAim }): Promise<ChaosNode | null> => {
    const { aim, view } = step;
    const deadline = now() + OWNER_WAIT_MS_MAX;
    while (!stopped && now() < deadline) {
      const owner = viewTargets!.ownerOf(view);
      if (owner !== null && (step.fault === 'kill' || viewTargets!.settled())) {
        if (aim === 'view-owner') return owner;
        const others = target.nodes.filter(
          (n) => n.role === 'serve-node' && n !== owner && n.alive,
        );
        if (others.length > 0) return others[0];
      }
      await sleep(100);
    }
    return null;
  };

  /** Half the link faults cut a serve-node off the log: where stale reads would hide. */
  const pickLink = (): ChaosLink => {
    const feeds = target.links.filter((l) => l.replicaPartitions !== null);
    const others = target.links.filter((l) => l.replicaPartitions === null);
    const pool = random.int(0, 1) === 0 ? feeds : others;
    return random.pick(pool.length > 0 ? pool : target.links);
  };

  /** The next fault: random from the kind's, or (quota mode) one still owed, null when none is. */
  const next = (): Step | null => {
    if (!quota) {
      const fault = random.pick(kinds);
      if (fault === 'cut' || fault === 'stall') return { fault, link: pickLink() };
      return { fault, node: random.pick(victims) };
    }
    let left = owed.filter((o) => o.left > 0);
    if (left.length === 0) left = owedPauses.filter((o) => o.left > 0);
    if (left.length === 0) return null;
    const chosen = random.pick(left);
    chosen.left--;
    return chosen.step();
  };

  const hold = async (window: FaultWindow, ms: number, heal: () => void | Promise<void>) => {
    windows.push(window);
    await sleep(ms); // not cut short by stop(): the fault heals either way
    await heal();
    window.endMs = now();
  };

  const done = (async () => {
    while (!stopped) {
      await nap(random.int(...(quota ? QUOTA_BETWEEN_MS : BETWEEN_MS)));
      if (stopped) break;
      const step = next();
      if (step === null) break;
      const { fault } = step;
      const window: FaultWindow = { fault, target: '', startMs: 0, endMs: Infinity };
      if (step.link !== undefined) {
        const { link } = step;
        const holdMs = random.int(...LINK_HOLD_MS);
        log(`nemesis: ${fault} ${link.name} for ${holdMs} ms`);
        Object.assign(window, { target: link.name, link, startMs: now() });
        if (fault === 'cut') link.proxy.cut();
        else link.proxy.stall();
        count(`${fault} ${link.name}`);
        await hold(window, holdMs, () => link.proxy.heal());
        continue;
      }
      const holdMs = random.int(
        ...(fault === 'pause'
          ? step.aim === 'view-owner'
            ? OWNER_PAUSE_HOLD_MS
            : PAUSE_HOLD_MS
          : quota
            ? QUOTA_KILL_HOLD_MS
            : KILL_HOLD_MS),
      );
      const view = step.aim === undefined ? undefined : step.view;
      const node = step.aim === undefined ? step.node : await aimAt(step);
      const role = step.aim ?? node?.role;
      if (node === null) {
        log(`nemesis: ${fault} ${role} of ${view}: no owner named in time, skipped`);
        count(`${fault} ${role} (no owner named)`);
        continue;
      }
      log(`nemesis: ${fault} ${node.name}${view ? ` (${role} of ${view})` : ''} for ${holdMs} ms`);
      Object.assign(window, { target: node.name, startMs: now(), view });
      if (fault === 'kill') {
        await node.kill();
        count(`kill ${role}`);
        await hold(window, holdMs, () => node.start());
      } else {
        node.pause();
        count(`pause ${role}`);
        await hold(window, holdMs, () => node.resume());
      }
    }
  })();
  return {
    faults,
    windows,
    done,
    stop: () => {
      stopped = true;
      wake();
    },
  };
}
