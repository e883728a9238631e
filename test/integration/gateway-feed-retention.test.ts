// Proves the change feed never skips records silently: once retention has removed records after a
// consumer's token, resuming with it is 410 records_removed (naming the partition and its log
// start), and with removed=skip the feed continues from the log start. The gateway reaches the log
// by the Kafka protocol.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeGatewayServices } from '../../gateway/services.js';
import { startLogNode, type RunningLogNode } from '../../log-node/index.js';
import { KafkaLogClient } from '../../shared/kafka-log/index.js';
import { tempDir } from '../harness/index.js';
import { gatewayApp, silent } from './gateway-harness.js';

const dir = tempDir('feed-retention');
let node: RunningLogNode;
let gateway: Awaited<ReturnType<typeof gatewayApp>>;
let log: KafkaLogClient;

beforeAll(async () => {
  node = await startLogNode({
    dataDir: dir.path,
    port: 0,
    partitions: 1,
    cleanupPolicy: 'delete',
    segmentBytesMax: 2048,
    batchBytesMax: 2048,
    retentionBytes: 2048,
    logger: silent,
    kafka: { host: '127.0.0.1', port: 0 },
  });
  const broker = `127.0.0.1:${node.kafkaPort}`;
  log = await KafkaLogClient.connect({ bootstrap: [broker] });
  gateway = await gatewayApp(log, [], { logUrls: [`kafka://${broker}`] });
});

afterAll(async () => {
  await closeGatewayServices(gateway.services);
  log?.close();
  await node.stop();
  dir.cleanup();
});

const put = async (key: string) => {
  const response = await gateway.app.request(`/v1/collections/events/docs/${key}`, {
    method: 'PUT',
    body: JSON.stringify({ pad: 'x'.repeat(200) }),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as { token: string; offset: number };
};

describe('change feed after retention', () => {
  it('answers 410 for a token whose next records are gone, and skips them only when asked', async () => {
    const first = await put('k0');
    for (let i = 1; i < 40; i++) await put(`k${i}`);
    const cleaned = (await node.cleaner.runOnce()).find((summary) => summary.topic === 'events');
    expect(cleaned?.segmentsDeleted).toBeGreaterThan(0);
    const offsets = await log.offsets();
    const { logStartOffset } = offsets.find((p) => p.topic === 'events')!;
    expect(logStartOffset).toBeGreaterThan(first.offset + 1);

    const gone = await gateway.app.request(`/v1/changes?token=${first.token}`);
    expect(gone.status).toBe(410);
    const body = (await gone.json()) as { error: Record<string, unknown> };
    expect(body.error).toMatchObject({
      code: 'records_removed',
      collection: 'events',
      partition: 0,
      logStartOffset,
    });

    const skipped = await gateway.app.request(
      `/v1/changes?token=${first.token}&removed=skip&limit=1`,
    );
    expect(skipped.status).toBe(200);
    const [event] = (await skipped.text())
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(event.offset).toBe(logStartOffset);
    // The stream's starting token already counts the accepted gap: resuming with it is no 410.
    const start = skipped.headers.get('tailbase-token')!;
    const resumed = await gateway.app.request(`/v1/changes?token=${start}&limit=1`);
    expect(resumed.status).toBe(200);
    await resumed.text();
    // With a token, from is not used, but a bad one is still refused.
    const bad = await gateway.app.request(`/v1/changes?token=${start}&from=later`);
    expect(bad.status).toBe(400);
  });
});
