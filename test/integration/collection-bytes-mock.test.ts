/**
 * Bytes on disk where the log cannot say them: `tailbase start` on librdkafka's mock cluster (a
 * Kafka implementation nobody here wrote, without DescribeLogDirs) lists a collection with its
 * log bytes and total null, unknown rather than 0, and its serving stores' bytes known.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { embeddedOnMock } from '../harness/embedded-on-mock.js';
import { mockClusterAvailable } from '../harness/kafka-mock.js';
import { call } from './gateway-harness.js';

const COLLECTION = 'orders';
const PARTITIONS = 3;

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

describe.skipIf(!mockClusterAvailable())("bytes on disk on librdkafka's mock cluster", () => {
  it("lists the log's bytes as null (unknown), the serving stores' as counted", async () => {
    const { embedded, stop } = await embeddedOnMock({ [COLLECTION]: PARTITIONS });
    cleanups.push(stop);

    const docs = Array.from({ length: 50 }, (_, i) => ({ key: `o${i}`, value: { n: i } }));
    const path = `/v1/collections/${COLLECTION}/docs?wait=applied`;
    expect((await call(embedded.url, 'POST', path, docs)).status).toBe(200);
    const listed = await call(embedded.url, 'GET', '/v1/collections');
    expect(listed.status).toBe(200);
    const row = (listed.body.collections as { collection: string; bytes: unknown }[]).find(
      (c) => c.collection === COLLECTION,
    );
    expect(row?.bytes).toEqual({
      log: null,
      lmdb: expect.any(Number),
      sqlite: expect.any(Number),
      total: null,
    });
    const { lmdb, sqlite } = row!.bytes as { lmdb: number; sqlite: number };
    expect(lmdb).toBeGreaterThan(0);
    expect(sqlite).toBeGreaterThan(0);
  });
});
