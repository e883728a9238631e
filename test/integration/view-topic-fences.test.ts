// Proves a serve-node's view/collection decision (serve-node/view-topic-fences.ts) is made for a
// topic as it was when a look began: a drop here while the look is under way leaves the name to be
// asked about afresh, as a restarted node would; and that while the views topic cannot be read,
// topics asked about again and again (held partitions re-read) cost one read and one log line per
// pause, the pauses doubling, and are decided once it can. A real log node; its reads failing is
// injected at the client.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import type { LogClient } from '../../shared/log-api.js';
import { VIEWS_TOPIC } from '../../shared/topics.js';
import { ViewTopicFences } from '../../serve-node/view-topic-fences.js';
import { sleep } from '../harness/index.js';
import { silent, startLog, type LogFixture } from './gateway-harness.js';

const ASK_EVERY_MS = 10;
const ASKING_MS = 600;
const WAIT_MS_MAX = 10_000;

let log: LogFixture;
beforeAll(async () => {
  log = await startLog(1);
  await log.client.ensureTopic(VIEWS_TOPIC);
});
afterAll(() => log.stop());

/** The log client, its calls failing while `broken` (as with the log unreachable), counted. */
function breakable(client: LogClient) {
  const state = { broken: false, failedCalls: 0 };
  const proxy = new Proxy(client, {
    get(target, name, receiver) {
      const value: unknown = Reflect.get(target, name, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (!state.broken) return (value as (...a: unknown[]) => unknown).apply(target, args);
        state.failedCalls += 1;
        return Promise.reject(new Error('injected: the log is unreachable'));
      };
    },
  });
  return { client: proxy, state };
}

async function until(what: string, done: () => boolean): Promise<void> {
  for (let waited = 0; waited < WAIT_MS_MAX; waited += ASK_EVERY_MS) {
    if (done()) return;
    await sleep(ASK_EVERY_MS);
  }
  throw new Error(`${what}: not within ${WAIT_MS_MAX} ms`);
}

describe('ViewTopicFences', () => {
  it('records no kind for a topic dropped here while the look that was asked about it ran', async () => {
    const decided: string[] = [];
    const fences = new ViewTopicFences(log.client, {
      readBytesMax: 1 << 20,
      retryMsMax: 1_000,
      logger: silent,
      tails: () => true,
      onDecided: (topic) => decided.push(topic),
    });
    fences.ask('dropped');
    // The look is reading the views topic: the drop comes first.
    fences.forget('dropped');
    fences.ask('other');
    await until('the later look', () => decided.includes('other'));
    expect(fences.of('other')).toBe('collection');
    expect(fences.of('dropped')).toBe('unknown');
    expect(decided).not.toContain('dropped');
    // Asked afresh, it is decided.
    fences.ask('dropped');
    await until('the fresh look', () => decided.includes('dropped'));
    expect(fences.of('dropped')).toBe('collection');
  });

  it('reads the views topic once a pause while it fails, one log line each, then decides', async () => {
    const { client, state } = breakable(log.client);
    const warnings: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => warnings.push(line) });
    const decided = new Set<string>();
    const fences = new ViewTopicFences(client, {
      readBytesMax: 1 << 20,
      retryMsMax: 400,
      logger,
      tails: () => true,
      onDecided: (topic) => decided.add(topic),
    });
    const topics = ['a', 'b', 'c'];
    state.broken = true;
    for (let waited = 0; waited < ASKING_MS; waited += ASK_EVERY_MS) {
      for (const topic of topics) fences.ask(topic);
      await sleep(ASK_EVERY_MS);
    }
    // Pauses of 50, 100, 200, 400 ms: at most 5 reads began in 600 ms (each may fail at its first call).
    expect(warnings.length).toBeGreaterThanOrEqual(2);
    expect(warnings.length).toBeLessThanOrEqual(5);
    // A read's first step asks the log for the start and the end offsets: two calls.
    expect(state.failedCalls).toBeLessThanOrEqual(2 * warnings.length);
    expect(topics.map((topic) => fences.of(topic))).toEqual(['unknown', 'unknown', 'unknown']);
    state.broken = false;
    await until('decided once the views topic reads', () => {
      for (const topic of topics) fences.ask(topic);
      return decided.size === topics.length;
    });
    expect(topics.map((topic) => fences.of(topic))).toEqual([
      'collection',
      'collection',
      'collection',
    ]);
  });
});
