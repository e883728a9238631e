// Proves that a view processor does not resume from a state it cannot use: one whose checkpoint
// is past the source's end (the source dropped and written again, shorter) and one that fails to
// open (its file overwritten) are discarded with a warning, the view is rebuilt from the start of
// the source, and the view's topic then says what a recomputation from the new source log gives,
// with a tombstone for each group the old state had and the new source has not. A log-node
// in-process, the view processor on its in-process binding (`tailbase start`'s placement).
import { writeFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openLogNode, type OpenLogNode } from '../../log-node/index.js';
import { decodeRecords, encodeBatch, iterateBatches } from '../../shared/batch-codec.js';
import { partitionFor } from '../../shared/partitioner.js';
import { VIEWS_TOPIC } from '../../shared/topics.js';
import { fenceRecords } from '../../shared/view-epoch.js';
import { ViewHost } from '../../views/view-host.js';
import { sleep } from '../harness/spawn-node.js';
import { tempDir } from '../harness/temp-dir.js';
import { expectedView, readSourceDocuments } from './view-check.js';

const PARTITIONS = 2;
const VIEW = 'per_country';
const DEFINITION = { from: 'orders', groupBy: ['country'], aggregates: { n: 'count()' } };
const WAIT_MS = 20_000;

const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

describe('a view state the processor cannot use is discarded and the view rebuilt', () => {
  const dir = tempDir('views-state-unusable');
  let node: OpenLogNode;
  let version = 0;
  let host: ViewHost | null = null;
  const warnings: string[] = [];
  const logger = pino(
    { level: 'warn' },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        warnings.push(chunk.toString('utf8'));
        done();
      },
    }),
  );

  const write = async (orders: [key: string, country: string][]) => {
    for (const [key, country] of orders) {
      await node.client.append(
        'orders',
        partitionFor(key, PARTITIONS),
        encodeBatch([{ key, value: encode({ country }), timestampMs: Date.now() }]),
      );
    }
  };
  const startHost = async () => {
    host = await ViewHost.start({
      log: node.client,
      dataDir: `${dir.path}/views`,
      logger,
      limits: { fetchWaitMs: 50 },
    });
    return host;
  };
  /** The view as a replica applies its topic: the last unfenced record of each key. */
  const viewTopic = async () => {
    const docs = new Map<string, unknown>();
    for (const o of await node.client.offsets()) {
      if (o.topic !== VIEW) continue;
      const read = await node.client.read(VIEW, o.partition, 0, { maxBytes: 1 << 20 });
      const records = [...iterateBatches(read.batches)].flatMap((b) => decodeRecords(b.bytes));
      for (const record of fenceRecords(records, -1).kept) {
        if (record.value === null) docs.delete(record.key);
        else docs.set(record.key, JSON.parse(new TextDecoder().decode(record.value)));
      }
    }
    return docs;
  };
  /** Waits until the view has processed the source to its end and its topic says it all. */
  const expectRecomputed = async () => {
    const expected = expectedView(
      DEFINITION,
      await readSourceDocuments(node.client, 'orders', PARTITIONS),
    );
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      const ends = (await node.client.offsets()).filter((o) => o.topic === 'orders');
      const progress = host!.progress(VIEW, version);
      const through = ends.every((e) => progress?.frontiers[e.partition]?.frontier === e.endOffset);
      if (through) {
        expect(Object.fromEntries(await viewTopic())).toEqual(Object.fromEntries(expected));
        return progress!;
      }
      expect(Date.now(), JSON.stringify(progress)).toBeLessThan(deadline);
      await sleep(25);
    }
  };

  beforeAll(async () => {
    node = await openLogNode({ dataDir: `${dir.path}/log`, partitions: PARTITIONS, logger });
    await write(
      Array.from(
        { length: 30 },
        (_, i) => [`o${i}`, ['FR', 'DE', 'IT'][i % 3]] as [string, string],
      ),
    );
    version = (
      await node.client.append(
        VIEWS_TOPIC,
        0,
        encodeBatch([{ key: VIEW, value: encode(DEFINITION), timestampMs: Date.now() }]),
      )
    ).baseOffset;
    await startHost();
    await expectRecomputed();
    await host!.stop();
  });

  afterAll(async () => {
    await host?.stop();
    await node?.stop();
    dir.cleanup();
  });

  it('rebuilds when its checkpoint is past the source end, and tombstones the groups gone', async () => {
    await node.client.deleteTopic('orders');
    await write([
      ['n1', 'FR'],
      ['n2', 'ES'],
    ]);
    warnings.length = 0;
    await startHost();
    const progress = await expectRecomputed();
    expect(progress.frontiers.every((f) => f.resumedFrom === undefined)).toBe(true);
    expect(warnings.join('')).toContain("view state past its source's end: discarded");
    await host!.stop();
  });

  it('resumes from a state it can use: no warning, resumedFrom its checkpoint', async () => {
    await write([['n3', 'PT']]);
    warnings.length = 0;
    await startHost();
    const progress = await expectRecomputed();
    expect(progress.frontiers.every((f) => f.resumedFrom !== undefined)).toBe(true);
    expect(warnings).toEqual([]);
    await host!.stop();
  });

  it('rebuilds when its state fails to open', async () => {
    writeFileSync(`${dir.path}/views/${VIEW}@${version}/state.mdb`, 'not an LMDB file'.repeat(512));
    await write([['n4', 'PT']]);
    warnings.length = 0;
    await startHost();
    const progress = await expectRecomputed();
    expect(progress.frontiers.every((f) => f.resumedFrom === undefined)).toBe(true);
    expect(warnings.join('')).toContain('view state unreadable: deleted');
  });
});
