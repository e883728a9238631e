/**
 * A change feed outlives a partition's leader election: on librdkafka's mock cluster partition 1
 * of the collection loses its leader while a feed follows both partitions. Partition 0's writes
 * keep arriving, and once partition 1 has a leader again its writes follow, in the same stream,
 * with no error line (the feed ended on the first such error before).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { embeddedOnMock } from '../harness/embedded-on-mock.js';
import { mockClusterAvailable } from '../harness/kafka-mock.js';
import { keysIn } from '../harness/keys.js';
import { sleep } from '../harness/spawn-node.js';
import { call } from './gateway-harness.js';

const PARTITIONS = 2;
/** Long enough for the feed's next fetch round, which starts as soon as it sent an event. */
const ROUND_MS = 1_000;

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

describe.skipIf(!mockClusterAvailable())('a change feed while a partition has no leader', () => {
  it("keeps delivering the other partitions and resumes the leaderless one's", async () => {
    const { mock, embedded, stop } = await embeddedOnMock({ c: PARTITIONS });
    cleanups.push(stop);
    const [inZero] = keysIn(0, PARTITIONS, 1, 'zero-');
    const [inOne] = keysIn(1, PARTITIONS, 1, 'one-');
    const feed = await fetch(`${embedded.url}/v1/changes?collection=c&from=now&limit=2`);
    expect(feed.status).toBe(200);
    const reader = feed.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    /** Reads the stream until it holds `count` lines, or until it ends. */
    const linesUpTo = async (count: number) => {
      while (text.split('\n').length <= count) {
        const { value, done } = await reader.read();
        if (done) break;
        text += value;
      }
      return text
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, unknown>);
    };

    await mock.command('leader c 1 -1');
    // The feed's client shares the gateway's metadata: this read has it learn of the election.
    const strong = await call(embedded.url, 'GET', '/v1/collections/c/docs?consistency=strong');
    expect(strong.status).toBe(503);
    const first = await call(embedded.url, 'PUT', `/v1/collections/c/docs/${inZero}`, { n: 0 });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(
      (await linesUpTo(1)).map((event) => event.key),
      text,
    ).toEqual([inZero]);
    // The feed's next round asks for partition 1 at once, and meets its election.
    await sleep(ROUND_MS);

    await mock.command('leader c 1 2');
    const second = await call(embedded.url, 'PUT', `/v1/collections/c/docs/${inOne}`, { n: 1 });
    expect(second.status, JSON.stringify(second.body)).toBe(200);
    const events = await linesUpTo(2);
    expect(events.map((event) => [event.key, event.partition])).toEqual([
      [inZero, 0],
      [inOne, 1],
    ]);
  });
});
