// Proves a serve-node serves exactly the partitions it hosts: restarted on the same data directory
// with more it replays the new ones, and with fewer it replays its own into new stores, since the
// others' documents would count in its search statistics.
import { describe, expect, it } from 'vitest';
import { encodeBatch } from '../../shared/batch-codec.js';
import { TailbaseError } from '../../shared/errors.js';
import { logAndServeNodes } from '../harness/index.js';

const nodes = logAndServeNodes('partitions');

const docBatch = (key: string) =>
  encodeBatch([{ key, value: Buffer.from(`{"text":"hello ${key}"}`), timestampMs: 1 }]);

describe('serve-node hosted partitions', () => {
  it('replays the partitions it gains, and into new stores when it loses one', async () => {
    const log = await nodes.startLog({ partitions: 2 });
    const p0 = await log.append('c', 0, docBatch('zero'));
    const p1 = await log.append('c', 1, docBatch('one'));
    const start = (partitions?: number[]) => nodes.startServe({ partitions });

    let serve = await start([1]);
    await serve.get('c', 'one', { waitFor: { 1: p1.lastOffset } });
    expect((await serve.get('c', 'zero')).doc).toBe(null);
    await nodes.serveNode!.stop();

    serve = await start();
    expect((await serve.get('c', 'zero', { waitFor: { 0: p0.lastOffset } })).doc?.partition).toBe(
      0,
    );
    await nodes.serveNode!.stop();

    serve = await start([1]);
    expect((await serve.status()).lastRebuild?.reason).toMatch(/no longer hosts \(0\)/);
    expect((await serve.get('c', 'one', { waitFor: { 1: p1.lastOffset } })).doc?.key).toBe('one');
    expect((await serve.get('c', 'zero')).doc).toBe(null);
    expect((await serve.scan('c')).items.map((item) => item.key)).toEqual(['one']);
    expect((await serve.search('c', { q: 'hello' })).hits.map((hit) => hit.key)).toEqual(['one']);
    const tailed = (await serve.status()).partitions.filter((p) => p.topic === 'c');
    expect(tailed.map((p) => p.partition)).toEqual([1]);
    const error = await serve.get('c', 'zero', { waitFor: { 0: 0 } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TailbaseError);
    expect(error).toMatchObject({ status: 400, code: 'partition_not_hosted' });
  });
});
