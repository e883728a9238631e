// Proves that when retention moves the log start past a serve-node's checkpoint, the node wipes
// and rebuilds by itself, says so in its status, and ends equal to the retained log.
import { describe, expect, it } from 'vitest';
import { encodeBatch } from '../../shared/batch-codec.js';
import { logAndServeNodes, sleep } from '../harness/index.js';

const nodes = logAndServeNodes('retention');

const batchOf = (first: number, count: number) =>
  encodeBatch(
    Array.from({ length: count }, (_, i) => ({
      key: `e${first + i}`,
      value: Buffer.from(JSON.stringify({ n: first + i, pad: 'x'.repeat(200) })),
      timestampMs: Date.now(),
    })),
  );

describe('serve-node behind the log start', () => {
  it('rebuilds by itself when retention removed what its checkpoint needs', async () => {
    const log = await nodes.startLog({
      partitions: 1,
      batchBytesMax: 32 * 1024,
      segmentBytesMax: 32 * 1024,
      cleanupPolicy: 'delete',
      retentionBytes: 96 * 1024,
      cleanerIntervalMs: 50,
    });
    const first = await log.append('events', 0, batchOf(0, 50));
    const serve = await nodes.startServe();
    expect((await serve.get('events', 'e0', { waitFor: { 0: first.lastOffset } })).doc).not.toBe(
      null,
    );
    await nodes.serveNode!.stop();

    let end = first.lastOffset;
    for (let n = 50; n < 2_000; n += 50) {
      end = (await log.append('events', 0, batchOf(n, 50))).lastOffset;
    }
    let logStart = 0;
    for (let polls = 0; polls < 200 && logStart <= first.lastOffset + 1; polls++) {
      logStart = (await log.offsets()).find((p) => p.topic === 'events')!.logStartOffset;
      await sleep(50);
    }
    expect(logStart).toBeGreaterThan(first.lastOffset + 1);

    const restarted = await nodes.startServe();
    const got = await restarted.get('events', `e${end}`, { waitFor: { 0: end }, waitMs: 20_000 });
    expect(JSON.parse(got.doc?.json ?? 'null')).toMatchObject({ n: end });
    const status = await restarted.status();
    expect(status.lastRebuild?.reason).toMatch(/before the log start/);
    expect(status.partitions.find((p) => p.topic === 'events')?.applied).toBe(end + 1);
    expect((await restarted.get('events', 'e0')).doc).toBe(null);
    const scanned = await restarted.scan('events', { limit: 1_000 });
    expect(scanned.items.length + (scanned.more ? 1 : 0)).toBeGreaterThan(0);
    expect(Math.min(...scanned.items.map((item) => item.offset))).toBeGreaterThanOrEqual(logStart);
  });
});
