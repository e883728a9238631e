// Proves a log-node that hangs (alive, never answering) fails the log client's calls within its
// bound instead of holding them forever: offsets, reads and a serve-node's fetch all reject as
// log_unreachable once answerMsMax (plus the wait they asked for) has passed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpLogClient } from '../../shared/http-log-client.js';
import { INTERNAL_TOPICS } from '../../shared/topics.js';
import { logAndServeNodes, startStallProxy } from '../harness/index.js';

const ANSWER_MS_MAX = 200;
const nodes = logAndServeNodes('log-deadline');
let proxy: Awaited<ReturnType<typeof startStallProxy>>;

beforeAll(async () => {
  await nodes.startLog({ partitions: 2 });
  proxy = await startStallProxy(() => nodes.logNode!.url);
});

afterAll(async () => {
  await proxy.close();
});

describe('log client against a hung log-node', () => {
  it('rejects each call as log_unreachable within its bound', async () => {
    const client = new HttpLogClient(proxy.url, { answerMsMax: ANSWER_MS_MAX });
    // The two partitions of events, and the one of each internal topic.
    await client.ensureTopic('events');
    expect((await client.offsets()).length).toBe(2 + INTERNAL_TOPICS.length);
    proxy.stall(true);
    for (const [call, waitMs] of [
      [() => client.offsets(), 0],
      [() => client.topics(), 0],
      [() => client.read('events', 0, 0, { waitMs: 100 }), 100],
      [() => client.fetch([{ topic: 'events', partition: 0, offset: 0 }], { waitMs: 100 }), 100],
    ] as const) {
      const started = performance.now();
      await expect(call()).rejects.toMatchObject({ status: 503, code: 'log_unreachable' });
      const tookMs = performance.now() - started;
      expect(tookMs).toBeGreaterThanOrEqual(ANSWER_MS_MAX + waitMs - 5);
      expect(tookMs).toBeLessThan(ANSWER_MS_MAX + waitMs + 1000);
    }
    client.close();
  });
});
