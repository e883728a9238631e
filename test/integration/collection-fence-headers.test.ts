// Proves that a collection's topic is never fenced as a view's is: on a Kafka that is not our
// log-node (librdkafka's mock cluster, where no Produce check refuses the headers), kcat writes
// to a collection records carrying a forged `tailbase-epoch` (far above any epoch) and a forged
// `tailbase-claim`, then the gateway writes ordinary documents after them. Every one of them is
// applied and readable with its token (before, the forged epoch left every later write unapplied:
// a token read waited out its 504), and the change feed sends them all.
import { afterAll, describe, expect, it } from 'vitest';
import { embeddedOnMock } from '../harness/embedded-on-mock.js';
import { mockClusterAvailable } from '../harness/kafka-mock.js';
import { kcat, KCAT_INSTALLED } from '../harness/kafka.js';
import { keysIn } from '../harness/keys.js';
import { call } from './gateway-harness.js';

const PARTITIONS = 2;
const CLIENT_TIMEOUT = ['-X', 'message.timeout.ms=10000', '-X', 'socket.timeout.ms=10000'];
/** Writes after the forged records, each read back with its own token. */
const WRITES = 6;

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

describe.skipIf(!mockClusterAvailable() || !KCAT_INSTALLED)(
  "a collection's records with view fence headers, on a Kafka without the Produce check",
  () => {
    it('applies them as the ordinary records they are, and every write after them', async () => {
      const { mock, embedded, stop } = await embeddedOnMock({ c: PARTITIONS });
      cleanups.push(stop);
      const url = embedded.url;
      const produce = async (partition: number, key: string, value: unknown, header: string) => {
        const args = ['-P', '-b', mock.bootstrap, '-t', 'c', '-p', String(partition), '-K', '\t'];
        await kcat([...args, '-H', header, ...CLIENT_TIMEOUT], {
          input: `${key}\t${JSON.stringify(value)}\n`,
        });
      };
      const [forged, claimed] = keysIn(0, PARTITIONS, 2, 'forged-');
      await produce(0, forged, { forged: true }, 'tailbase-epoch=1000000000');
      await produce(0, claimed, { claimed: true }, 'tailbase-claim=');

      const written: { key: string; token: string }[] = [];
      for (const key of keysIn(0, PARTITIONS, WRITES, 'after-')) {
        const put = await call(url, 'PUT', `/v1/collections/c/docs/${key}`, { key });
        expect(put.status, JSON.stringify(put.body)).toBe(200);
        written.push({ key, token: put.body.token as string });
      }
      for (const { key, token } of written) {
        const read = await call(
          url,
          'GET',
          `/v1/collections/c/docs/${key}?wait_ms=3000`,
          undefined,
          {
            'tailbase-token': token,
          },
        );
        expect(read.status, JSON.stringify(read.body)).toBe(200);
        expect(read.body.value).toEqual({ key });
      }
      const last = written[written.length - 1].token;
      for (const [key, value] of [
        [forged, { forged: true }],
        [claimed, { claimed: true }],
      ] as const) {
        const read = await call(url, 'GET', `/v1/collections/c/docs/${key}`, undefined, {
          'tailbase-token': last,
        });
        expect(read.status, JSON.stringify(read.body)).toBe(200);
        expect(read.body.value).toEqual(value);
      }

      const feed = await fetch(`${url}/v1/changes?collection=c&limit=${WRITES + 2}`);
      expect(feed.status).toBe(200);
      const lines = (await feed.text())
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { key: string });
      expect(lines.map((line) => line.key)).toEqual([
        forged,
        claimed,
        ...written.map(({ key }) => key),
      ]);
    });
  },
);
