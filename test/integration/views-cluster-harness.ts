/**
 * What the cluster tests of views share: a log-node, serve-nodes that run the view processors as
 * members of the views group, and a gateway, as processes on loopback; which member runs a view
 * (from its log lines); and a wait until the published frontiers reach the source's end.
 */
import { freePort } from '../harness/free-port.js';
import { kafkaFace, type KafkaFace } from '../harness/kafka-face.js';
import { sleep, spawnNode, type SpawnedNode } from '../harness/spawn-node.js';
import { tempDir, type TempDir } from '../harness/temp-dir.js';
import { call } from './gateway-harness.js';

export interface ViewsClusterOptions {
  name: string;
  partitions: number;
  secret: string;
  serveNodes: number;
  /** More arguments of every serve-node (the views group's timeouts, fetch limits). */
  serveArgs: string[];
}

export interface ViewsCluster {
  kafka: KafkaFace;
  gateway: SpawnedNode;
  /** By index; null while stopped. */
  serves: (SpawnedNode | null)[];
  /** Starts serve-node `i` on its data directory and port (again after a kill: the same ones). */
  startServe(i: number): Promise<SpawnedNode>;
  /** The index among `among` of the serve-node whose latest assignment holds `task`, or null. */
  ownerOf(task: string, among: readonly number[]): number | null;
  /** Waits until one of `among` is dealt `task`; answers its index. */
  waitForOwner(task: string, among: readonly number[], waitMsMax: number): Promise<number>;
  /** Waits until the view's published frontiers reach the source's end offsets; its info. */
  publishedThroughSourceEnds(
    view: string,
    source: string,
    waitMsMax: number,
  ): Promise<Record<string, unknown>>;
  stop(): Promise<void>;
}

export async function startViewsCluster(options: ViewsClusterOptions): Promise<ViewsCluster> {
  const { name, partitions, secret } = options;
  const dirs: TempDir[] = [tempDir(`${name}-log`)];
  const serves: (SpawnedNode | null)[] = [];
  // Ports of their own, kept across restarts: the gateway is told them once.
  const ports: number[] = [];
  for (let i = 0; i < options.serveNodes; i++) {
    dirs.push(tempDir(`${name}-s${i}`));
    serves.push(null);
    ports.push(await freePort());
  }
  const kafka = await kafkaFace();
  const log = await spawnNode('log-node', [
    ...['--data', dirs[0].path, '--port', '0', '--partitions', String(partitions)],
    ...['--cluster-secret', secret, ...kafka.args],
  ]);

  const startServe = async (i: number): Promise<SpawnedNode> => {
    const node = await spawnNode(
      'serve-node',
      [
        ...['--data', dirs[1 + i].path, '--port', String(ports[i]), '--log', kafka.url],
        ...['--cluster-secret', secret, ...options.serveArgs],
      ],
      { env: { TAILBASE_LOG_LEVEL: 'info' }, readyTimeoutMs: 30_000 },
    );
    serves[i] = node;
    return node;
  };
  await Promise.all(serves.map((_, i) => startServe(i)));
  const gateway = await spawnNode('gateway', [
    ...['--port', '0', '--log', kafka.url, '--cluster-secret', secret],
    ...['--serve', serves.map((s) => s!.url).join(',')],
  ]);

  const ownerOf = (task: string, among: readonly number[]): number | null => {
    for (const i of among) {
      const last = (serves[i]?.output() ?? '')
        .split('\n')
        .filter((line) => line.includes('view tasks of this member'))
        .at(-1);
      if (last !== undefined && (JSON.parse(last) as { tasks: string[] }).tasks.includes(task)) {
        return i;
      }
    }
    return null;
  };

  return {
    kafka,
    gateway,
    serves,
    startServe,
    ownerOf,
    async waitForOwner(task, among, waitMsMax) {
      const deadline = Date.now() + waitMsMax;
      for (;;) {
        const owner = ownerOf(task, among);
        if (owner !== null) return owner;
        if (Date.now() > deadline) throw new Error(`no member of ${among} took ${task}`);
        await sleep(100);
      }
    },
    async publishedThroughSourceEnds(view, source, waitMsMax) {
      const client = await kafka.connect();
      try {
        const ends = new Map(
          (await client.offsets())
            .filter((o) => o.topic === source)
            .map((o) => [o.partition, o.endOffset]),
        );
        const deadline = Date.now() + waitMsMax;
        for (;;) {
          const info = await call(gateway.url, 'GET', `/v1/views/${view}`);
          const frontiers = info.body.frontiers as { partition: number; frontier: number }[] | null;
          if (frontiers?.every((f) => f.frontier >= (ends.get(f.partition) ?? 0))) {
            return info.body;
          }
          if (Date.now() > deadline) throw new Error(`not published: ${JSON.stringify(info.body)}`);
          await sleep(100);
        }
      } finally {
        client.close();
      }
    },
    async stop() {
      await gateway.stop();
      await Promise.all(serves.map((s) => s?.stop()));
      await log.stop();
      for (const dir of dirs) dir.cleanup();
    },
  };
}
