/**
 * `tailbase start --log-compression gzip` as a user runs it: the batches the gateway appends are
 * stored gzip, and what PUT, bulk and DELETE wrote is what a strong GET answers and search finds
 * (the serve-node applies the inflated records), and what kcat -C reads back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CODECS } from '../../shared/batch-compression.js';
import { spawnEmbedded, type SpawnedEmbedded } from '../harness/embedded.js';
import { httpJson } from '../harness/http-json.js';
import { kafkaBrokerOf, kcatConsumeAll, KCAT_INSTALLED } from '../harness/kafka.js';
import { storedCodecs } from '../harness/log-batches.js';

describe('tailbase start --log-compression gzip', () => {
  let node: SpawnedEmbedded;
  beforeAll(async () => {
    node = await spawnEmbedded({ partitions: 2, args: ['--log-compression', 'gzip'] });
  });
  afterAll(async () => {
    await node?.stop();
  });

  it('stores the gateway appends gzip; GET, search and kcat -C read what was written', async () => {
    const bulk = Array.from({ length: 300 }, (_, i) => ({
      key: `doc-${i}`,
      value: { i, text: `the zeppelin flies over the same town again ${i}` },
    }));
    const posted = await httpJson(`${node.url}/v1/collections/towns/docs`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-ndjson' },
      body: bulk.map((line) => JSON.stringify(line)).join('\n') + '\n',
    });
    expect(posted.status).toBe(200);
    const put = await httpJson(`${node.url}/v1/collections/towns/docs/doc-7`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ i: 7, text: 'rewritten' }),
    });
    expect(put.status).toBe(200);
    const deleted = await httpJson(`${node.url}/v1/collections/towns/docs/doc-8`, {
      method: 'DELETE',
    });
    expect(deleted.status).toBe(200);

    expect(storedCodecs(node.dataDir, 'towns').has(CODECS.gzip)).toBe(true);
    const got = await httpJson(`${node.url}/v1/collections/towns/docs/doc-7?consistency=strong`);
    expect(got.body).toMatchObject({ key: 'doc-7', value: { i: 7, text: 'rewritten' } });
    expect(
      (await httpJson(`${node.url}/v1/collections/towns/docs/doc-8?consistency=strong`)).status,
    ).toBe(404);
    const search = await httpJson(
      `${node.url}/v1/collections/towns/search?q=zeppelin&limit=1&consistency=strong`,
    );
    expect(search.body.total).toBe(bulk.length - 2);
    if (KCAT_INSTALLED) {
      const lines = await kcatConsumeAll(kafkaBrokerOf(node.output()), 'towns');
      expect(lines).toHaveLength(bulk.length + 2);
      expect(lines.filter((line) => / doc-1 /.test(line))).toEqual([
        expect.stringMatching(` doc-1 ${JSON.stringify(bulk[1].value)}`),
      ]);
    }
  });
});
