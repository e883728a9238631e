// Proves the apply linger: a serve-node that has caught up, with no read waiting, pauses before its
// next log read (so a write is not yet visible to a read without a token), and a read that waits
// for the write's offset ends the pause at once instead of waiting it out.
import { describe, expect, it } from 'vitest';
import { encodeBatch } from '../../shared/batch-codec.js';
import { logAndServeNodes } from '../harness/index.js';

const LINGER_MS = 5_000;
const nodes = logAndServeNodes('apply-linger');

const put = (key: string) =>
  encodeBatch([
    { collection: 'c', key, value: Buffer.from(JSON.stringify({ key })), timestampMs: 1 },
  ]);

describe('serve-node apply linger', () => {
  it('holds back reads without a token and never a read that waits', async () => {
    const log = await nodes.startLog({ partitions: 1 });
    const serve = await nodes.startServe({ limits: { applyLingerMs: LINGER_MS } });
    const first = await log.append(0, put('a'));
    const a = await serve.get('c', 'a', { waitFor: { 0: first.lastOffset }, waitMs: 10_000 });
    expect(a.doc?.key).toBe('a');

    // Caught up after applying `a` and no read waiting: the fetcher pauses.
    const second = await log.append(0, put('b'));
    expect((await serve.get('c', 'b')).doc).toBeNull();

    const started = performance.now();
    const b = await serve.get('c', 'b', { waitFor: { 0: second.lastOffset }, waitMs: 10_000 });
    expect(b.doc?.key).toBe('b');
    expect(performance.now() - started).toBeLessThan(LINGER_MS / 2);
  });
});
