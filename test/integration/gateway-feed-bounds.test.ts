// Proves the change feed's position and bounds over a real log-node: a feed opened at the end of a
// never-written cluster resumes from its opening id without missing a write, `token=` wins over a
// session token in the header, each feed holds one long-poll per log-node (here the log-node takes
// only one at a time, so a reader per partition would be refused), and `feedsMax` turns away the
// feed past it before its stream starts. The gateway reaches the log-node by its Kafka listener.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeGatewayServices } from '../../gateway/services.js';
import { openLogNode, type OpenLogNode } from '../../log-node/index.js';
import { KafkaLogClient } from '../../shared/kafka-log/index.js';
import { tempDir } from '../harness/index.js';
import { gatewayApp, silent } from './gateway-harness.js';

const dir = tempDir('feed-bounds');
let node: OpenLogNode;
let log: KafkaLogClient;
let gateway: Awaited<ReturnType<typeof gatewayApp>>;
const FEEDS_MAX = 2;

beforeAll(async () => {
  node = await openLogNode({
    dataDir: dir.path,
    partitions: 4,
    longPollsMax: 1,
    logger: silent,
    kafka: { host: '127.0.0.1', port: 0 },
  });
  const broker = `127.0.0.1:${node.kafkaPort}`;
  log = await KafkaLogClient.connect({ bootstrap: [broker], logger: silent });
  gateway = await gatewayApp(log, [], {
    logUrls: [`kafka://${broker}`],
    limits: { feedsMax: FEEDS_MAX },
    feedPollMs: 200,
  });
});

afterAll(async () => {
  await closeGatewayServices(gateway.services);
  log.close();
  await node.stop();
  dir.cleanup();
});

const put = async (collection: string, key: string) => {
  const response = await gateway.app.request(`/v1/collections/${collection}/docs/${key}`, {
    method: 'PUT',
    body: JSON.stringify({ key }),
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { token: string }).token;
};

const firstEvent = async (response: Response) => {
  expect(response.status).toBe(200);
  const text = await response.text();
  const data = /^data: (.+)$/m.exec(text)?.[1] ?? text.split('\n')[0];
  return JSON.parse(data) as { key: string; token: string };
};

/** Opens an SSE feed and reads up to its opening id, then leaves it. */
const openingId = async (path: string) => {
  const controller = new AbortController();
  const response = await gateway.app.request(path, {
    headers: { accept: 'text/event-stream' },
    signal: controller.signal,
  });
  const reader = response.body!.getReader();
  let text = '';
  while (!text.includes('\n\n')) text += new TextDecoder().decode((await reader.read()).value);
  controller.abort();
  await reader.cancel();
  return /^id: (.+)$/m.exec(text)![1];
};

const openFeeds = () => gateway.services.feeds.size;

const until = async (done: () => boolean) => {
  const deadline = Date.now() + 5000;
  while (!done()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
};

describe('change feed position and bounds', () => {
  it('resumes a feed opened at the end of a never-written cluster from its opening id', async () => {
    const id = await openingId('/v1/changes?from=now');
    await until(() => openFeeds() === 0);
    await put('first', 'a');
    const bySse = await gateway.app.request('/v1/changes?from=now&limit=1', {
      headers: { accept: 'text/event-stream', 'last-event-id': id },
    });
    expect(await firstEvent(bySse)).toMatchObject({ key: 'a' });
    const byToken = await gateway.app.request(`/v1/changes?from=now&limit=1&token=${id}`);
    expect(await firstEvent(byToken)).toMatchObject({ key: 'a' });
  });

  it('reads every partition with one long-poll and takes token= over the header', async () => {
    const before = await put('order', 'x1');
    const session = await put('order', 'x2');
    const response = await gateway.app.request(
      `/v1/changes?collection=order&limit=1&token=${before}`,
      { headers: { 'tailbase-token': session } },
    );
    await put('order', 'x3');
    expect(await firstEvent(response)).toMatchObject({ key: 'x2' });
  });

  it('turns away a feed past feedsMax before its stream starts', async () => {
    const controllers = Array.from({ length: FEEDS_MAX }, () => new AbortController());
    const open = await Promise.all(
      controllers.map((controller) =>
        gateway.app.request('/v1/changes?from=now', { signal: controller.signal }),
      ),
    );
    expect(open.map((response) => response.status)).toEqual([200, 200]);
    const refused = await gateway.app.request('/v1/changes?from=now');
    expect(refused.status).toBe(503);
    expect(await refused.json()).toMatchObject({
      error: { code: 'too_many_feeds', limit: 'feedsMax', max: FEEDS_MAX },
    });
    controllers[0].abort();
    await until(() => openFeeds() < FEEDS_MAX);
    const again = new AbortController();
    const reopened = await gateway.app.request('/v1/changes?from=now', { signal: again.signal });
    expect(reopened.status).toBe(200);
    again.abort();
    controllers[1].abort();
    await until(() => openFeeds() === 0);
  });
});
