/**
 * A strong read promises every write acknowledged before it began, so it needs the high watermark
 * of each partition it touches. On librdkafka's mock cluster (a Kafka nobody here wrote) partition
 * 1 of a collection loses its leader: a strong read of a key in partition 0 is answered, a strong
 * scan (every partition) is 503 `partition_unavailable` naming partition 1 (never an answer that
 * skipped it), status still answers, and once a leader is back the same scan sees both writes.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { embeddedOnMock } from '../harness/embedded-on-mock.js';
import { mockClusterAvailable } from '../harness/kafka-mock.js';
import { keysIn } from '../harness/keys.js';
import { call } from './gateway-harness.js';

const PARTITIONS = 2;
const STRONG = 'consistency=strong&wait_ms=5000';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

describe.skipIf(!mockClusterAvailable())('a strong read over a partition without a leader', () => {
  it('is refused for that partition alone, and answered again once it has one', async () => {
    const { mock, embedded, stop } = await embeddedOnMock({ c: PARTITIONS });
    cleanups.push(stop);
    const [inZero] = keysIn(0, PARTITIONS, 1, 'zero-');
    const [inOne] = keysIn(1, PARTITIONS, 1, 'one-');
    for (const key of [inZero, inOne]) {
      const put = await call(embedded.url, 'PUT', `/v1/collections/c/docs/${key}`, { key });
      expect(put.status, JSON.stringify(put.body)).toBe(200);
    }

    await mock.command('leader c 1 -1');
    const got = await call(embedded.url, 'GET', `/v1/collections/c/docs/${inZero}?${STRONG}`);
    expect(got.status, JSON.stringify(got.body)).toBe(200);
    expect(got.body.value).toEqual({ key: inZero });
    const scan = await call(embedded.url, 'GET', `/v1/collections/c/docs?${STRONG}`);
    expect(scan.status, JSON.stringify(scan.body)).toBe(503);
    expect(scan.body.error).toMatchObject({
      code: 'partition_unavailable',
      topic: 'c',
      partitions: [1],
    });
    const status = await call(embedded.url, 'GET', '/v1/status');
    expect(status.status, JSON.stringify(status.body)).toBe(200);

    await mock.command('leader c 1 2');
    const again = await call(embedded.url, 'GET', `/v1/collections/c/docs?${STRONG}`);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body.items.map((item: { key: string }) => item.key).sort()).toEqual(
      [inZero, inOne].sort(),
    );
  });

  it('reads no settings from a settings partition without a leader, not an empty topic', async () => {
    const { mock, embedded, stop } = await embeddedOnMock({ c: PARTITIONS });
    cleanups.push(stop);
    const patched = await call(embedded.url, 'PATCH', '/v1/collections/c/settings', {
      filterable: ['year'],
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);

    await mock.command('leader __tailbase_settings 0 -1');
    const read = await call(embedded.url, 'GET', '/v1/collections/c/settings');
    expect(read.status, JSON.stringify(read.body)).toBe(503);
    expect(read.body.error).toMatchObject({
      code: 'partition_unavailable',
      topic: '__tailbase_settings',
    });

    await mock.command('leader __tailbase_settings 0 1');
    const back = await call(embedded.url, 'GET', '/v1/collections/c/settings');
    expect(back.status, JSON.stringify(back.body)).toBe(200);
    expect(back.body.settings.filterable).toEqual(['year']);
  });
});
