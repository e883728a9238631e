// Proves read-your-writes under concurrency: 32 sessions doing put-then-get and put-then-search
// with their tokens see 0 stale reads, while one serve-node is slowed on purpose (a proxy delays
// its log reads) so that reads without a token of the partitions it serves are sometimes stale:
// the token matters. Strong reads of a write another client made never are, nor reads of a write
// that asked for wait=applied, which past its wait_ms is a 504 naming the lagging node.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKafkaProxy, type KafkaProxy } from '../harness/kafka-proxy.js';
import { call, startCluster, type ClusterFixture } from './gateway-harness.js';

const SESSIONS = 32;
const DELAY_MS = 60;
let cluster: ClusterFixture;
let proxy: KafkaProxy;
/** Serve-node 1, the slowed one, hosts partitions 2 and 3 of 4. */
const slowed = (partition: number) => partition >= 2;

beforeAll(async () => {
  let broker = '';
  // Between serve-node 1 and the log: every Fetch answer held DELAY_MS before it is passed on.
  proxy = await startKafkaProxy({
    target: () => {
      const [host, port] = broker.split(':');
      return { host, port: Number(port) };
    },
    fetchAnswerDelayMs: DELAY_MS,
  });
  cluster = await startCluster({
    partitions: 4,
    serveLogUrl: (logBroker, index) => {
      broker = logBroker;
      return `kafka://${index === 1 ? proxy.broker : logBroker}`;
    },
  });
});

afterAll(async () => {
  await cluster.stop();
  await proxy.close();
});

describe('read-your-writes', () => {
  it(`${SESSIONS} sessions with tokens never read stale; without tokens they sometimes do`, async () => {
    const url = cluster.url;
    let staleWithToken = 0;
    /**
     * A token read past its wait answers 504 `not_caught_up`, the contract's honest answer on a
     * machine too busy to apply within wait_ms: counted apart from a stale read, never as one.
     */
    let timedOutWithToken = 0;
    const staleWithout = { slowed: 0, other: 0 };
    let reads = 0;
    const judge = (read: { status: number; body: Record<string, any> }, fresh: boolean) => {
      if (read.status === 504 && read.body.error?.code === 'not_caught_up') timedOutWithToken++;
      else if (read.status !== 200 || !fresh) staleWithToken++;
    };
    const session = async (s: number) => {
      let token: string | null = null;
      for (let i = 0; i < 4; i++) {
        const key = `s${s}-k${i % 2}`;
        const headers: Record<string, string> = token ? { 'tailbase-token': token } : {};
        const put = await call(url, 'PUT', `/v1/collections/ryw/docs/${key}`, { i, s }, headers);
        expect(put.status).toBe(200);
        token = put.token!;
        const get = await call(url, 'GET', `/v1/collections/ryw/docs/${key}`, undefined, {
          'tailbase-token': token,
        });
        reads++;
        judge(get, get.body.value?.i === i);
        token = get.token ?? token;
      }
      const word = `word${s}x${Date.now() % 100000}`;
      const put = await call(
        url,
        'PUT',
        `/v1/collections/rywsearch/docs/d${s}`,
        { text: word },
        {
          'tailbase-token': token!,
        },
      );
      const search = await call(
        url,
        'GET',
        `/v1/collections/rywsearch/search?q=${word}`,
        undefined,
        {
          'tailbase-token': put.token!,
        },
      );
      reads++;
      judge(search, search.body.hits?.[0]?.key === `d${s}`);
      for (let i = 0; i < 3; i++) {
        const key = `e${s}-${i}`;
        const put = await call(url, 'PUT', `/v1/collections/rywe/docs/${key}`, { i });
        const get = await call(url, 'GET', `/v1/collections/rywe/docs/${key}`);
        if (get.status !== 200) staleWithout[slowed(put.body.partition) ? 'slowed' : 'other']++;
      }
    };
    await Promise.all(Array.from({ length: SESSIONS }, (_, s) => session(s)));
    console.log(
      `reads with a token: ${reads}, stale: ${staleWithToken}, 504 past the wait: ${timedOutWithToken}; stale without one: ` +
        `${staleWithout.slowed} on the slowed node, ${staleWithout.other} on the other`,
    );
    expect(staleWithToken).toBe(0);
    // Most token reads answered, or the test showed nothing of read-your-writes.
    expect(timedOutWithToken).toBeLessThan(reads / 2);
    expect(staleWithout.slowed).toBeGreaterThan(0);
  });

  it('strong reads see a write another client had acknowledged; eventual ones sometimes not', async () => {
    const url = cluster.url;
    let staleStrong = 0;
    let staleEventual = 0;
    let slowedWrites = 0;
    for (let i = 0; i < 40; i++) {
      const key = `strong-${i}`;
      const put = await call(url, 'PUT', `/v1/collections/strong/docs/${key}`, { i });
      if (!slowed(put.body.partition)) continue;
      slowedWrites++;
      // Another client: it holds no token, only the knowledge that the write was acknowledged.
      const [strong, eventual] = await Promise.all([
        call(url, 'GET', `/v1/collections/strong/docs/${key}?consistency=strong`),
        call(url, 'GET', `/v1/collections/strong/docs/${key}`),
      ]);
      if (strong.status !== 200 || strong.body.value.i !== i) staleStrong++;
      if (eventual.status !== 200) staleEventual++;
    }
    expect(slowedWrites).toBeGreaterThan(0);
    expect(staleStrong).toBe(0);
    expect(staleEventual).toBeGreaterThan(0);
  });

  it('a write with wait=applied is read at once without a token, even on the slowed node', async () => {
    const url = cluster.url;
    let stale = 0;
    let slowedWrites = 0;
    for (let i = 0; i < 24; i++) {
      const key = `applied-${i}`;
      const put = await call(url, 'PUT', `/v1/collections/applied/docs/${key}?wait=applied`, {
        i,
      });
      expect(put.status).toBe(200);
      if (slowed(put.body.partition)) slowedWrites++;
      const get = await call(url, 'GET', `/v1/collections/applied/docs/${key}`);
      if (get.status !== 200 || get.body.value.i !== i) stale++;
    }
    const words = Array.from({ length: 40 }, (_, i) => ({
      key: `w${i}`,
      value: { text: 'quokka' },
    }));
    const bulk = await call(url, 'POST', '/v1/collections/applied/docs?wait=applied', words);
    expect(bulk.status).toBe(200);
    const found = await call(url, 'GET', '/v1/collections/applied/search?q=quokka&limit=1');
    expect(slowedWrites).toBeGreaterThan(0);
    expect(stale).toBe(0);
    expect(found.body.total).toBe(words.length);
  });

  it('wait=applied past wait_ms is a 504 naming the lagging node, partition and offsets', async () => {
    const url = cluster.url;
    // No node applies a write within 0 ms of its ack; a few tries in case one was that quick.
    for (let i = 0; i < 10; i++) {
      const put = await call(url, 'PUT', `/v1/collections/late/docs/k${i}?wait=applied&wait_ms=0`, {
        i,
      });
      if (put.status === 200) continue;
      expect(put.status).toBe(504);
      const [behind] = put.body.error.behind;
      expect(put.body.error).toMatchObject({ code: 'not_caught_up', token: expect.any(String) });
      expect(behind).toMatchObject({ topic: 'late', required: expect.any(Number) });
      expect(behind.node).toBe(slowed(behind.partition) ? 1 : 0);
      // The write is stored: its token reads it.
      const get = await call(url, 'GET', `/v1/collections/late/docs/k${i}`, undefined, {
        'tailbase-token': put.body.error.token,
      });
      expect(get.body.value).toEqual({ i });
      return;
    }
    expect.unreachable('no write with wait_ms=0 timed out');
  });
});
