// Proves that a view over a source whose log start is past 0 (retention removed its first
// records) says it covers only what the log still holds: its processor, and a redefinition's
// rebuild, report `coversFrom` = the log start they began from, per source partition, and the
// rebuild still swaps in once it reached the source's end. A windowed view is where it matters:
// its events are every record, and the removed ones are not counted. An in-process log-node with
// small segments and delete retention, the view processors on its in-process binding.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeBatch } from '../../shared/batch-codec.js';
import { VIEWS_TOPIC } from '../../shared/topics.js';
import { REBUILD_KEY_SUFFIX, type RebuildRecord, ViewCatalog } from '../../shared/view-catalog.js';
import type { ViewDefinition } from '../../shared/view-definition.js';
import type { ViewProgress } from '../../shared/view-api.js';
import { openLogNode, type OpenLogNode } from '../../log-node/index.js';
import { ViewHost } from '../../views/view-host.js';
import { tempDir } from '../harness/index.js';
import { sleep } from '../harness/spawn-node.js';
import { silent } from './gateway-harness.js';

const dir = tempDir('views-retention');
const WAIT_MS = 20_000;
let node: OpenLogNode;
let host: ViewHost;

const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
const PER_MINUTE: ViewDefinition = {
  from: 'events',
  groupBy: ['kind'],
  aggregates: { n: 'count()' },
  window: { field: 'ts', size: '1m' },
};

beforeAll(async () => {
  node = await openLogNode({
    dataDir: `${dir.path}/log`,
    partitions: 1,
    cleanupPolicy: 'delete',
    segmentBytesMax: 2048,
    batchBytesMax: 2048,
    retentionBytes: 2048,
    logger: silent,
  });
});

afterAll(async () => {
  await host?.stop();
  await node?.stop();
  dir.cleanup();
});

/** Waits until the view's version has processed the source to its end; answers its progress. */
async function caughtUp(name: string, version: number, end: number): Promise<ViewProgress> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const progress = host.progress(name, version);
    if (progress?.frontiers.every((f) => f.frontier >= end)) return progress;
    expect(Date.now()).toBeLessThan(deadline);
    await sleep(25);
  }
}

describe('views over a source whose log start is past 0', () => {
  it('say they cover only what the log still holds, and a rebuild does too', async () => {
    for (let i = 0; i < 40; i++) {
      const event = { kind: i % 2 === 0 ? 'click' : 'view', ts: i * 1000, pad: 'x'.repeat(150) };
      await node.client.append(
        'events',
        0,
        encodeBatch([{ key: `e${i}`, value: encode(event), timestampMs: Date.now() }]),
      );
    }
    await node.cleaner.runOnce();
    const bounds = (await node.client.offsets()).find((o) => o.topic === 'events')!;
    expect(bounds.logStartOffset).toBeGreaterThan(0);

    const declared = await node.client.append(
      VIEWS_TOPIC,
      0,
      encodeBatch([{ key: 'per_minute', value: encode(PER_MINUTE), timestampMs: Date.now() }]),
    );
    host = await ViewHost.start({
      log: node.client,
      dataDir: `${dir.path}/views`,
      logger: silent,
    });
    const first = await caughtUp('per_minute', declared.baseOffset, bounds.endOffset);
    expect(first.frontiers).toEqual([
      {
        partition: 0,
        frontier: bounds.endOffset,
        lag: 0,
        processed: bounds.endOffset,
        coversFrom: bounds.logStartOffset,
      },
    ]);

    const rebuild: RebuildRecord = {
      definition: { ...PER_MINUTE, aggregates: { n: 'count()', last: 'max(ts)' } },
      topic: 'per_minute--rebuilt1',
      targets: { '0': bounds.endOffset },
      retired: [],
    };
    const redefined = await node.client.append(
      VIEWS_TOPIC,
      0,
      encodeBatch([
        { key: `per_minute${REBUILD_KEY_SUFFIX}`, value: encode(rebuild), timestampMs: Date.now() },
      ]),
    );
    await host.settle();
    // It swaps once caught up: the new version serves, and said what it covers while it built.
    const catalog = new ViewCatalog(node.client, 1024 * 1024);
    const deadline = Date.now() + WAIT_MS;
    while ((await catalog.current()).get('per_minute')?.version !== redefined.baseOffset) {
      expect(Date.now()).toBeLessThan(deadline);
      await sleep(25);
    }
    const swapped = await caughtUp('per_minute', redefined.baseOffset, bounds.endOffset);
    expect(swapped.frontiers[0].coversFrom).toBe(bounds.logStartOffset);
    expect((await catalog.current()).get('per_minute')).toMatchObject({
      topic: 'per_minute--rebuilt1',
      rebuild: null,
    });
  });
});
