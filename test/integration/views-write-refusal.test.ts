// Proves the guarantee any cheaper write path must keep: a write to a view declared a moment ago
// through another gateway is refused (409 view_read_only) and changes nothing, on every write
// route, and so is a write to the topic of a redefinition's version, though the writing gateway
// had read the views just before (its catalog was warm and said neither was a view). Two gateways
// over one log-node, reached by the Kafka protocol. The code is the gateway's: with its check
// gone (a cached catalog), this log-node would still refuse the produce (409
// topic_policy_violation, log-node/kafka/view-topics.ts), but a Kafka cluster, or a log-node not
// holding the views topic, would not, so the check stays and this test fails without it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeGatewayServices } from '../../gateway/services.js';
import { gatewayApp, startLog, type LogFixture } from './gateway-harness.js';

const PARTITIONS = 2;
let log: LogFixture;
let a: Awaited<ReturnType<typeof gatewayApp>>;
let b: Awaited<ReturnType<typeof gatewayApp>>;

beforeAll(async () => {
  log = await startLog(PARTITIONS);
  a = await gatewayApp(log.client, [], { logUrls: [log.url] });
  b = await gatewayApp(log.client, [], { logUrls: [log.url] });
});

afterAll(async () => {
  for (const gateway of [a, b]) if (gateway) await closeGatewayServices(gateway.services);
  await log?.stop();
});

const send = (gateway: typeof a, method: string, path: string, body?: unknown) =>
  gateway.app.request(path, {
    method,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

async function ends(topic: string): Promise<number[]> {
  return (await log.client.offsets())
    .filter((o) => o.topic === topic)
    .sort((x, y) => x.partition - y.partition)
    .map((o) => o.endOffset);
}

async function expectRefused(collection: string): Promise<void> {
  const before = await ends(collection);
  const answers = [
    await send(b, 'PUT', `/v1/collections/${collection}/docs/x`, { a: 1 }),
    await send(b, 'DELETE', `/v1/collections/${collection}/docs/x`),
    await send(b, 'POST', `/v1/collections/${collection}/docs`, [{ key: 'x', value: { a: 1 } }]),
  ];
  for (const answer of answers) {
    expect([
      answer.status,
      ((await answer.json()) as { error: { code: string } }).error.code,
    ]).toEqual([409, 'view_read_only']);
  }
  expect(await ends(collection)).toEqual(before);
}

describe('writes to a view declared through another gateway a moment ago', () => {
  it('are refused on every write route and change nothing', async () => {
    expect((await send(a, 'PUT', '/v1/collections/src/docs/k', { c: 'FR' })).status).toBe(200);
    // Gateway b reads the views now: none yet. Its next write must still see the declaration.
    expect((await send(b, 'GET', '/v1/views')).status).toBe(200);
    const definition = { from: 'src', groupBy: ['c'], aggregates: { n: 'count()' } };
    expect((await send(a, 'PUT', '/v1/views/per_c', definition)).status).toBe(200);
    await expectRefused('per_c');

    const redefined = await send(a, 'PUT', '/v1/views/per_c', {
      ...definition,
      aggregates: { n: 'count()', m: 'count()' },
    });
    expect(redefined.status).toBe(200);
    const { topic } = ((await redefined.json()) as { rebuilding: { topic: string } }).rebuilding;
    await expectRefused(topic);
  });
});
