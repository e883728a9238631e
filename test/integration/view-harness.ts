/**
 * What the views' process tests share: a `tailbase start` with a Kafka port of the test's choice,
 * a view read whole once it has processed every source record, and kill -9 amid writes.
 */
import { expect } from 'vitest';
import type { ScanPage } from '../../gateway/api/index.js';
import type { Random } from '../harness/random.js';
import { sleep, spawnNode, type SpawnedNode } from '../harness/spawn-node.js';
import { type Answer, call } from './gateway-harness.js';

const CAUGHT_UP_WAIT_MS = 20_000;

export async function startWithViews(
  data: string,
  kafkaPort: number,
  partitions: number,
  extra: string[] = [],
): Promise<SpawnedNode> {
  const args = ['--data', data, '--port', '0', '--kafka-port', String(kafkaPort), ...extra];
  return spawnNode('start', [...args, '--partitions', String(partitions)], {
    urlPattern: /tailbase is ready: (https?:\/\/\S+)/,
    readyTimeoutMs: 30_000,
  });
}

/** Waits until the view has processed every source record, then reads it whole (strong). */
export async function caughtUpView(
  url: string,
  view: string,
  source = 'orders',
): Promise<Map<string, unknown>> {
  const deadline = Date.now() + CAUGHT_UP_WAIT_MS;
  for (;;) {
    const status = await call(url, 'GET', '/v1/status');
    const ends = new Map(
      (status.body.partitions as { topic: string; partition: number; endOffset: number }[])
        .filter((p) => p.topic === source)
        .map((p) => [p.partition, p.endOffset]),
    );
    const info = await call(url, 'GET', `/v1/views/${view}`);
    const frontiers = info.body.frontiers as { partition: number; frontier: number }[] | null;
    if (frontiers?.every((f) => f.frontier === (ends.get(f.partition) ?? 0))) break;
    if (Date.now() > deadline)
      throw new Error(`view ${view} did not catch up: ${JSON.stringify(info.body)}`);
    await sleep(50);
  }
  const docs = new Map<string, unknown>();
  let cursor: string | null = null;
  do {
    const page: Answer<ScanPage> = await call<ScanPage>(
      url,
      'GET',
      `/v1/collections/${view}/docs?consistency=strong&limit=1000${cursor ? `&cursor=${cursor}` : ''}`,
    );
    expect(page.status).toBe(200);
    for (const item of page.body.items) docs.set(item.key, item.value);
    cursor = page.body.cursor;
  } while (cursor !== null);
  return docs;
}

/**
 * Kills the process with SIGKILL amid writes, `rounds` times, each after a random pause (the
 * processor is mid-round somewhere), restarting it on the same data; answers the last process.
 */
export async function killAmidWrites(
  node: SpawnedNode,
  restart: () => Promise<SpawnedNode>,
  random: Random,
  writes: (url: string) => Promise<void>,
  rounds: number,
): Promise<SpawnedNode> {
  let current = node;
  for (let round = 0; round < rounds; round++) {
    const writing = writes(current.url).catch(() => undefined);
    await sleep(random.int(20, 400));
    await current.kill('SIGKILL');
    await writing;
    current = await restart();
  }
  return current;
}
