/**
 * kcat (librdkafka, a client nobody here wrote) against `tailbase start` run as a user runs it, a
 * real child process: `kcat -P -K:` produces keyed JSON documents to a collection topic, and the
 * gateway's strong GET answers each one exactly (value and the offset kcat -C reads it at) and
 * search finds them; then what the HTTP API writes (PUT, bulk, DELETE) is what `kcat -C -e` reads
 * back, keys and values exact, a DELETE as a NULL value, each in Kafka's murmur2 partition.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partitionFor } from '../../shared/partitioner.js';
import { spawnEmbedded, type SpawnedEmbedded } from '../harness/embedded.js';
import { httpJson } from '../harness/http-json.js';
import {
  kafkaBrokerOf,
  kcat,
  KCAT_CLIENT_TIMEOUT,
  kcatConsumeAll,
  kcatConsumeByKey,
  KCAT_INSTALLED,
} from '../harness/kafka.js';

const PARTITIONS = 4;

describe.skipIf(!KCAT_INSTALLED)('kcat against tailbase start (a spawned process)', () => {
  let node: SpawnedEmbedded;
  let broker: string;
  beforeAll(async () => {
    node = await spawnEmbedded({ partitions: PARTITIONS });
    broker = kafkaBrokerOf(node.output());
  });
  afterAll(async () => {
    await node?.stop();
  });

  it('kcat -P -K: documents are what a strong GET answers, at the offset kcat -C reads, and search finds them', async () => {
    const documents = Array.from({ length: 30 }, (_, i) => ({
      key: `paper-${i}`,
      value: JSON.stringify({
        n: i,
        title: `Kafka paper ${i}`,
        body: `zeppelin log number ${i} ✓`,
      }),
    }));
    await kcat(
      ['-P', '-b', broker, '-t', 'papers', '-K:', '-X', 'partitioner=murmur2_random'].concat(
        KCAT_CLIENT_TIMEOUT,
      ),
      { input: documents.map(({ key, value }) => `${key}:${value}\n`).join('') },
    );
    const consumed = await kcatConsumeByKey(broker, 'papers');
    expect(consumed.size).toBe(documents.length);
    for (const { key, value } of documents) {
      const read = consumed.get(key)!;
      expect(read.value).toBe(value);
      expect(read.partition).toBe(partitionFor(key, PARTITIONS));
      const got = await httpJson(
        `${node.url}/v1/collections/papers/docs/${key}?consistency=strong`,
      );
      expect(got.status).toBe(200);
      expect(got.body).toEqual({ key, value: JSON.parse(value), offset: read.offset });
    }
    const search = await httpJson(
      `${node.url}/v1/collections/papers/search?q=zeppelin&limit=100&consistency=strong`,
    );
    expect(search.status).toBe(200);
    const hits = (search.body.hits as { key: string; value: unknown }[]).map((hit) => hit.key);
    expect(hits.sort()).toEqual(documents.map(({ key }) => key).sort());
    expect(search.body.total).toBe(documents.length);
  });

  it('kcat -C -e reads back what PUT, bulk and DELETE wrote, keys and values exact, in the murmur2 partition', async () => {
    const written: { key: string; value: string | null }[] = [];
    for (let i = 0; i < 10; i++) {
      const value = { i, text: `put ${i} — é`, big: '12345678901234567890' };
      const put = await httpJson(`${node.url}/v1/collections/letters/docs/put-${i}`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(value),
      });
      expect(put.status).toBe(200);
      written.push({ key: `put-${i}`, value: JSON.stringify(value) });
    }
    const bulk = Array.from({ length: 20 }, (_, i) => ({
      key: `bulk-${i}`,
      value: { i, nested: { list: [1, 2, i] }, text: `bulk ${i}` },
    }));
    const posted = await httpJson(`${node.url}/v1/collections/letters/docs`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-ndjson' },
      body: bulk.map((line) => JSON.stringify(line)).join('\n') + '\n',
    });
    expect(posted.status).toBe(200);
    expect(posted.body.count).toBe(bulk.length);
    for (const { key, value } of bulk) written.push({ key, value: JSON.stringify(value) });
    for (const key of ['put-3', 'bulk-7', 'never-written']) {
      const deleted = await httpJson(`${node.url}/v1/collections/letters/docs/${key}`, {
        method: 'DELETE',
      });
      expect(deleted.status).toBe(200);
      written.push({ key, value: null });
    }

    const lines = await kcatConsumeAll(broker, 'letters');
    expect(lines).toHaveLength(written.length);
    // Per partition, the log's order is the order the writes were acknowledged in.
    const byPartition = new Map<number, string[]>();
    for (const { key, value } of written) {
      const partition = partitionFor(key, PARTITIONS);
      byPartition.set(partition, [
        ...(byPartition.get(partition) ?? []),
        `${key} ${value ?? 'NULL'}`,
      ]);
    }
    const read = new Map<number, string[]>();
    for (const line of lines) {
      const [partition, offset, ...rest] = line.split(' ');
      const got = read.get(Number(partition)) ?? [];
      expect(Number(offset)).toBe(got.length);
      got.push(rest.join(' '));
      read.set(Number(partition), got);
    }
    expect(read).toEqual(byPartition);

    // The same through -f '%p %k %s' as the brief names it: partition, key, value.
    const pks = await kcat([
      '-C',
      '-b',
      broker,
      '-t',
      'letters',
      '-e',
      '-Z',
      '-f',
      '%p %k %s\n',
      ...KCAT_CLIENT_TIMEOUT,
    ]);
    const expected = written.map(
      ({ key, value }) => `${partitionFor(key, PARTITIONS)} ${key} ${value ?? 'NULL'}`,
    );
    expect(pks.split('\n').filter(Boolean).sort()).toEqual(expected.sort());
  });
});
