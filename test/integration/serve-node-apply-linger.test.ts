// Proves the apply linger: a serve-node that has caught up, with no read waiting and none for
// applyLingerIdleMs, pauses before its next log read (so a write is not yet visible to a read
// without a token), and a read that waits for the write's offset ends the pause at once instead of
// waiting it out. While reads wait now and then, it does not pause at all.
import { describe, expect, it } from 'vitest';
import { encodeBatch } from '../../shared/batch-codec.js';
import type { LogClient } from '../../shared/log-api.js';
import type { HttpServeClient } from '../../shared/http-serve-client.js';
import { logAndServeNodes } from '../harness/index.js';

const LINGER_MS = 5_000;
const IDLE_MS = 100;
const paused = logAndServeNodes('apply-linger');
const busy = logAndServeNodes('apply-linger-busy');
const slowWrite = logAndServeNodes('apply-linger-slow-write');

const put = (log: LogClient, key: string) =>
  log.append(
    'c',
    0,
    encodeBatch([{ key, value: Buffer.from(JSON.stringify({ key })), timestampMs: 1 }]),
  );

/** Until the in-process serve-node has a read waiting for offsets. */
async function untilWaiting(nodes: typeof paused) {
  while (nodes.serveNode!.node.waiters.size === 0) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Reads `key` without a token until it is there; the time it took. */
async function visibleAfterMs(serve: HttpServeClient, key: string, boundMs: number) {
  const started = performance.now();
  while ((await serve.get('c', key)).doc === null) {
    expect(performance.now() - started).toBeLessThan(boundMs);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return performance.now() - started;
}

describe('serve-node apply linger', () => {
  it('holds back reads without a token once reads are idle, and never a read that waits', async () => {
    const log = await paused.startLog({ partitions: 1 });
    // The collection exists before the serve-node starts, so it tails it from the start: a
    // collection found later is the subject of serve-node-reads.test.ts.
    await log.ensureTopic('c');
    const serve = await paused.startServe({
      limits: { applyLingerMs: LINGER_MS, applyLingerIdleMs: IDLE_MS },
    });
    // A read waiting for offset 0 before it is written: the fetcher has seen a read wait.
    const waiting = serve.get('c', 'a', { waitFor: { 0: 0 }, waitMs: 10_000 });
    await untilWaiting(paused);
    await put(log, 'a');
    expect((await waiting).doc?.key).toBe('a');
    // Past the idle time, the next apply is followed by a pause.
    await new Promise((resolve) => setTimeout(resolve, 2 * IDLE_MS));
    await put(log, 'b');
    await visibleAfterMs(serve, 'b', LINGER_MS / 2);

    const third = await put(log, 'c');
    expect((await serve.get('c', 'c')).doc).toBeNull();
    const started = performance.now();
    const c = await serve.get('c', 'c', { waitFor: { 0: third.lastOffset }, waitMs: 10_000 });
    expect(c.doc?.key).toBe('c');
    expect(performance.now() - started).toBeLessThan(LINGER_MS / 2);
  });

  it('does not pause while reads have waited within applyLingerIdleMs', async () => {
    const log = await busy.startLog({ partitions: 1 });
    await log.ensureTopic('c');
    const serve = await busy.startServe({
      limits: { applyLingerMs: LINGER_MS, applyLingerIdleMs: 60_000 },
    });
    const waiting = serve.get('c', 'a', { waitFor: { 0: 0 }, waitMs: 10_000 });
    await untilWaiting(busy);
    await put(log, 'a');
    await waiting;
    for (const key of ['b', 'c', 'd']) {
      await put(log, key);
      expect(await visibleAfterMs(serve, key, LINGER_MS / 2)).toBeLessThan(LINGER_MS / 2);
    }
  });

  it('counts a read as waiting until its wait ends, however long it waited', async () => {
    const log = await slowWrite.startLog({ partitions: 1 });
    await log.ensureTopic('c');
    const serve = await slowWrite.startServe({
      limits: { applyLingerMs: LINGER_MS, applyLingerIdleMs: IDLE_MS },
    });
    // The read waits three idle periods for a write that is slow to come: until it is answered
    // it is a read waiting, so the apply that answers it is not followed by a pause.
    const waiting = serve.get('c', 'a', { waitFor: { 0: 0 }, waitMs: 10_000 });
    await untilWaiting(slowWrite);
    await new Promise((resolve) => setTimeout(resolve, 3 * IDLE_MS));
    await put(log, 'a');
    expect((await waiting).doc?.key).toBe('a');
    await put(log, 'b');
    expect(await visibleAfterMs(serve, 'b', LINGER_MS / 2)).toBeLessThan(LINGER_MS / 2);
  });
});
