// Proves that a view's change feed leaves out what a serve-node leaves out whatever offset it
// starts at: on librdkafka's mock cluster (no Produce check, so kcat can write what a paused
// processor would), a claim of a later epoch lands in a view's partition, a feed opens past it
// (`from=now`), and a record of the earlier epoch follows, then one of the later epoch. The feed
// sends only the later one, and a strong read of the view finds only it: before, the feed counted
// epochs from where it began reading and sent the fenced record a serve-node skips.
import { afterAll, describe, expect, it } from 'vitest';
import { embeddedOnMock } from '../harness/embedded-on-mock.js';
import { mockClusterAvailable } from '../harness/kafka-mock.js';
import { kcat, KCAT_INSTALLED } from '../harness/kafka.js';
import { sleep } from '../harness/spawn-node.js';
import { partitionFor } from '../../shared/partitioner.js';
import { call } from './gateway-harness.js';

const PARTITIONS = 2;
const CLIENT_TIMEOUT = ['-X', 'message.timeout.ms=10000', '-X', 'socket.timeout.ms=10000'];
/** Above any epoch the processor claims (an offset of the view's partition 0). */
const LATER_EPOCH = 1_000_000_000;
/** How long the serve-node may take to apply what kcat wrote. */
const APPLY_MS_MAX = 10_000;

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

describe.skipIf(!mockClusterAvailable() || !KCAT_INSTALLED)(
  "a view's change feed that starts past a claim",
  () => {
    it('leaves out a fenced writer after it, as the serve-node does', async () => {
      const { mock, embedded, stop } = await embeddedOnMock({
        c: PARTITIONS,
        __tailbase_views: 1,
      });
      cleanups.push(stop);
      const url = embedded.url;
      const definition = { from: 'c', groupBy: ['country'], aggregates: { n: 'count()' } };
      // The mock has no CreateTopics: the view's topic is made here, before its PUT.
      await mock.command(`topic v ${PARTITIONS} 3`);
      const declared = await call(url, 'PUT', '/v1/views/v', definition);
      expect(declared.status, JSON.stringify(declared.body)).toBe(200);
      expect((await call(url, 'GET', '/v1/views/v')).status).toBe(200);

      /** Below the later claim's, as a paused processor's epoch would be. */
      const processorEpoch = 0;
      const fencedKey = JSON.stringify(['fenced']);
      const partition = partitionFor(fencedKey, PARTITIONS);
      // In the same partition: a feed that sent the fenced record would send it first.
      let later = 0;
      while (partitionFor(JSON.stringify([`later-${later}`]), PARTITIONS) !== partition) later++;
      const laterKey = JSON.stringify([`later-${later}`]);
      const produce = async (p: number, key: string, value: string | null, headers: string[]) => {
        const args = ['-P', '-b', mock.bootstrap, '-t', 'v', '-p', String(p), '-K', '\t', '-Z'];
        for (const header of headers) args.push('-H', header);
        await kcat([...args, ...CLIENT_TIMEOUT], { input: `${key}\t${value ?? ''}\n` });
      };
      // A later owner's claim.
      await produce(partition, 'claim', null, ['tailbase-claim=', `tailbase-epoch=${LATER_EPOCH}`]);

      const feed = await fetch(`${url}/v1/changes?collection=v&from=now&limit=1`);
      expect(feed.status).toBe(200);
      await produce(partition, fencedKey, JSON.stringify({ country: 'fenced', n: 1 }), [
        `tailbase-epoch=${processorEpoch}`,
      ]);
      await produce(partition, laterKey, JSON.stringify({ country: 'later', n: 1 }), [
        `tailbase-epoch=${LATER_EPOCH}`,
      ]);
      const lines = (await feed.text())
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { key: string });
      expect(lines.map((line) => line.key)).toEqual([laterKey]);

      // The serve-node skips it too: the later record is read, the fenced one is not.
      const read = (key: string) => call(url, 'GET', `/v1/collections/v/docs/${key}`);
      const deadline = Date.now() + APPLY_MS_MAX;
      while ((await read(laterKey)).status !== 200 && Date.now() < deadline) await sleep(100);
      expect((await read(laterKey)).status).toBe(200);
      expect((await read(fencedKey)).status).toBe(404);
    });
  },
);
