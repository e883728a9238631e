/**
 * The targets the chaos runner attacks, as real processes of the built CLI on 127.0.0.1, each on a
 * port picked once so a restarted node comes back at the same URL, on the same data directory:
 * - `embedded`: one `tailbase start` (log-node, serve-node and gateway in one process);
 * - `cluster`: a log-node, two serve-nodes (half the partitions each) and a gateway, every link
 *   between them through a proxy the link nemesis cuts and stalls (test/harness/link-proxy.ts):
 *   gateway → log-node, gateway → each serve-node, each serve-node → log-node (the log-node's
 *   Kafka listener, each proxy naming itself in its answers so no connection goes around it).
 *
 * The cluster's nodes share a cluster secret, so the serve-nodes' view processors may write the
 * views' topics (views/README.md, Who may write a view's topic); the serve-nodes log at info, so
 * their lines say which views each one runs (view-owners.ts).
 *
 * A node can be killed (-9) and restarted, or paused (SIGSTOP) and resumed (SIGCONT). Children
 * still running when this process exits are killed.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../harness/free-port.js';
import { startLinkProxy, type LinkProxy } from '../harness/link-proxy.js';
import { CLUSTER_SECRET_HEADER } from '../../shared/log-api.js';

/** The repository root: the nearest folder above this module with tailbase's package.json. */
function repositoryRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = path.join(dir, 'package.json');
    if (
      fs.existsSync(manifest) &&
      JSON.parse(fs.readFileSync(manifest, 'utf8')).name === 'tailbase'
    ) {
      return dir;
    }
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('no tailbase package.json above ' + import.meta.url);
    dir = parent;
  }
}

export const BIN = path.join(repositoryRoot(), 'dist/bin/tailbase.js');
const READY_TIMEOUT_MS = 60_000;
/** The cluster's secret: internal routes of its serve-nodes, and its view processors' logins. */
export const CLUSTER_SECRET = 'chaos-cluster-secret';
/** What a call to a cluster serve-node's internal routes carries. */
export const INTERNAL_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  [CLUSTER_SECRET_HEADER]: CLUSTER_SECRET,
});
/**
 * The view processors' session in the views group: the least a log-node's coordinator takes
 * (log-node/kafka/group-limits.ts), so a dead or paused owner loses its views soonest.
 */
export const VIEW_SESSION_TIMEOUT_MS = 6_000;
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) {
    child.kill('SIGCONT');
    child.kill('SIGKILL');
  }
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * With TAILBASE_CHAOS_NODE_LOGS set to a folder, every node's whole output, across restarts, is
 * appended to `<folder>/<node>.log` (the runner keeps only each one's last 32 KiB): a rare anomaly's
 * cause is in what the nodes said long before it fired.
 */
function nodeLogFile(name: string): string | null {
  const dir = process.env.TAILBASE_CHAOS_NODE_LOGS;
  if (dir === undefined || dir === '') return null;
  fs.mkdirSync(dir, { recursive: true });
  return path.join(dir, `${name}.log`);
}

export type Role = 'embedded' | 'log-node' | 'serve-node' | 'gateway';

export class ChaosNode {
  private child: ChildProcess | null = null;
  private exited: Promise<void> = Promise.resolve();
  private output = '';
  private readonly lineListeners: ((line: string) => void)[] = [];
  paused = false;
  starts = 0;

  constructor(
    readonly name: string,
    readonly role: Role,
    readonly url: string,
    private readonly args: string[],
    private readonly logLevel = 'warn',
  ) {}

  /** Calls `listener` with every line the node prints from now on, across restarts. */
  onLine(listener: (line: string) => void): void {
    this.lineListeners.push(listener);
  }

  get alive(): boolean {
    return this.child !== null;
  }

  /** Starts the process and waits (bounded) until its /readyz answers 200. */
  async start(): Promise<void> {
    if (!fs.existsSync(BIN)) throw new Error(`${BIN} is missing: build first (npm run build)`);
    const command = this.role === 'embedded' ? 'start' : this.role;
    const child = spawn(process.execPath, [BIN, command, ...this.args], {
      env: { ...process.env, TAILBASE_LOG_LEVEL: this.logLevel },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.starts++;
    running.add(child);
    this.child = child;
    const logFile = nodeLogFile(this.name);
    const append = (chunk: Buffer) => {
      this.output = (this.output + chunk.toString('utf8')).slice(-32_768);
      if (logFile !== null) fs.appendFileSync(logFile, chunk);
    };
    let partial = '';
    // The logger writes to stderr (shared/logger.ts): lines are split from it alone, so no
    // stdout chunk lands in one.
    const lines = (chunk: Buffer) => {
      const split = (partial + chunk.toString('utf8')).split('\n');
      partial = split.pop()!;
      for (const line of split) for (const listener of this.lineListeners) listener(line);
    };
    child.stdout!.on('data', append);
    child.stderr!.on('data', append);
    child.stderr!.on('data', lines);
    this.exited = new Promise((resolve) =>
      child.once('exit', () => {
        running.delete(child);
        if (this.child === child) this.child = null;
        resolve();
      }),
    );
    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      if (this.child !== child)
        throw new Error(`${this.name} exited while starting:\n${this.output}`);
      const ready = await fetch(`${this.url}/readyz`, { signal: AbortSignal.timeout(2000) }).then(
        (r) => r.ok,
        () => false,
      );
      if (ready) return;
      if (Date.now() > deadline) throw new Error(`${this.name} not ready in time:\n${this.output}`);
      await sleep(50);
    }
  }

  /** kill -9, resolved once the process is gone. */
  async kill(): Promise<void> {
    const child = this.child;
    if (child === null) return;
    child.kill('SIGKILL');
    if (this.paused) child.kill('SIGCONT');
    this.paused = false;
    await this.exited;
  }

  pause(): void {
    if (this.child === null || this.paused) return;
    this.child.kill('SIGSTOP');
    this.paused = true;
  }

  resume(): void {
    if (this.child === null || !this.paused) return;
    this.child.kill('SIGCONT');
    this.paused = false;
  }

  /** SIGTERM (resumed first), SIGKILL after 10 s. */
  async stop(): Promise<void> {
    const child = this.child;
    if (child === null) return;
    this.resume();
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await this.exited;
    clearTimeout(timer);
  }

  tail(): string {
    return this.output;
  }
}

/** A link between two nodes, through a proxy. */
export interface ChaosLink {
  /** "from→to", e.g. "serve-node-0→log-node". */
  name: string;
  proxy: LinkProxy;
  /** On a serve-node → log-node link: the partitions that serve-node hosts (and stops getting). */
  replicaPartitions: number[] | null;
}

/** A serve-node and the partitions it hosts, reached directly (not through a link proxy). */
export interface Replica {
  node: ChaosNode;
  partitions: number[];
}

export interface Target {
  kind: 'embedded' | 'cluster';
  /** The gateway's URL. */
  url: string;
  /** Every node, and those the nemeses may attack. */
  nodes: ChaosNode[];
  links: ChaosLink[];
  /** The folder every node's data directory is in. */
  dataRoot: string;
  /** cluster: the log-node's Kafka listener as `--log` names it, and the serve-nodes. */
  logUrl: string | null;
  /** The log's Kafka listener, `host:port`, reached directly (not through a link proxy). */
  kafkaBroker: string;
  replicas: Replica[];
  stop(): Promise<void>;
}

export const PARTITIONS = 4;

function dataRoot(): { path: string; cleanup(): void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tailbase-chaos-'));
  return {
    path: dir,
    cleanup: () => {
      if (process.env.TAILBASE_TEST_KEEP === '1') console.info(`kept ${dir}`);
      else fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function startAll(
  target: Omit<Target, 'stop' | 'dataRoot'>,
  root: { path: string; cleanup(): void },
): Promise<Target> {
  const { nodes, links } = target;
  const close = async () => {
    for (const link of links) await link.proxy.close();
    root.cleanup();
  };
  try {
    for (const node of nodes) await node.start();
  } catch (error) {
    await Promise.all(nodes.map((n) => n.kill()));
    await close();
    throw error;
  }
  return {
    ...target,
    dataRoot: root.path,
    stop: async () => {
      for (const node of [...nodes].reverse()) await node.stop();
      await close();
    },
  };
}

export async function startEmbedded(): Promise<Target> {
  const root = dataRoot();
  const port = await freePort();
  const kafka = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const node = new ChaosNode('embedded', 'embedded', url, [
    ...['--data', path.join(root.path, 'data'), '--port', String(port)],
    ...['--kafka-port', String(kafka), '--partitions', String(PARTITIONS)],
  ]);
  return startAll(
    {
      kind: 'embedded',
      url,
      nodes: [node],
      links: [],
      logUrl: null,
      kafkaBroker: `127.0.0.1:${kafka}`,
      replicas: [],
    },
    root,
  );
}

/** The partitions serve-node `i` of the cluster hosts: half of them each. */
export function clusterPartitions(i: number): number[] {
  const half = PARTITIONS / 2;
  return Array.from({ length: half }, (_, k) => i * half + k);
}

/**
 * A serve-node process of the cluster's log: with `views`, a member of the views group (a fresh
 * one on a new data directory, a replay, processes none: it would be dealt the cluster's views).
 */
export function serveNode(
  name: string,
  dataDir: string,
  port: number,
  logUrl: string,
  i: number,
  views: boolean,
) {
  const hosted = clusterPartitions(i);
  return new ChaosNode(
    name,
    'serve-node',
    `http://127.0.0.1:${port}`,
    [
      ...['--data', dataDir, '--port', String(port), '--cluster-secret', CLUSTER_SECRET],
      ...['--log', logUrl, '--partitions', `${hosted[0]}-${hosted[hosted.length - 1]}`],
      ...(views
        ? ['--view-session-timeout-ms', String(VIEW_SESSION_TIMEOUT_MS)]
        : ['--views', 'off']),
    ],
    views ? 'info' : 'warn',
  );
}

async function link(name: string, to: string, replicaPartitions: number[] | null) {
  const proxy = await startLinkProxy({ target: () => to, kafka: to.startsWith('kafka://') });
  return { name, proxy, replicaPartitions };
}

/** `--log` for a node on this link. */
const logThrough = (link: ChaosLink) => `kafka://127.0.0.1:${link.proxy.port}`;

export async function startCluster(): Promise<Target> {
  const root = dataRoot();
  const [logPort, kafka, serve0, serve1, gatewayPort] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  const at = (port: number) => `http://127.0.0.1:${port}`;
  const logUrl = `kafka://127.0.0.1:${kafka}`;
  const log = new ChaosNode('log-node', 'log-node', at(logPort), [
    ...['--data', path.join(root.path, 'log'), '--port', String(logPort)],
    ...['--kafka-port', String(kafka), '--partitions', String(PARTITIONS)],
    ...['--cluster-secret', CLUSTER_SECRET],
  ]);
  const links: ChaosLink[] = [];
  const serves: ChaosNode[] = [];
  for (const [i, port] of [serve0, serve1].entries()) {
    const feed = await link(`serve-node-${i}→log-node`, logUrl, clusterPartitions(i));
    links.push(feed);
    serves.push(
      serveNode(
        `serve-node-${i}`,
        path.join(root.path, `serve${i}`),
        port,
        logThrough(feed),
        i,
        true,
      ),
    );
  }
  const toLog = await link('gateway→log-node', logUrl, null);
  const toServes = await Promise.all(
    serves.map((serve) => link(`gateway→${serve.name}`, serve.url, null)),
  );
  links.push(toLog, ...toServes);
  const gateway = new ChaosNode('gateway', 'gateway', at(gatewayPort), [
    ...['--port', String(gatewayPort), '--log', logThrough(toLog)],
    ...['--serve', toServes.map((s) => s.proxy.url).join(',')],
    ...['--cluster-secret', CLUSTER_SECRET],
  ]);
  return startAll(
    {
      kind: 'cluster',
      url: gateway.url,
      nodes: [log, ...serves, gateway],
      links,
      logUrl,
      kafkaBroker: `127.0.0.1:${kafka}`,
      replicas: serves.map((node, i) => ({ node, partitions: clusterPartitions(i) })),
    },
    root,
  );
}
