// Proves that a view processor does not resume from a state it cannot use: one whose checkpoint
// is past the source's end (the source dropped and written again, shorter) and one that fails to
// open (its file overwritten) are discarded with a warning, the view is rebuilt from the start of
// the source, and the view's topic then says what a recomputation from the new source log gives,
// with a tombstone for each group the old state had and the new source has not. That a state
// emptied by such a discard, the process gone before its next transaction, holds those tombstones
// until the rebuild has caught up (none of a group the view still has reaches the topic). That a
// grouping's state of layout 1 is resumed from, by `tailbase start` and by a cluster's member
// (the layout changed for projections only), and that a state that processed nothing says it was
// not resumed. A log-node in-process, the view processor on its in-process binding.
import { writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openLogNode, type OpenLogNode } from '../../log-node/index.js';
import { decodeRecords, encodeBatch, iterateBatches } from '../../shared/batch-codec.js';
import { partitionFor } from '../../shared/partitioner.js';
import { VIEWS_TOPIC } from '../../shared/topics.js';
import { ViewHost } from '../../views/view-host.js';
import { standalonePlacement } from '../../views/view-placement.js';
import { ViewState } from '../../views/view-state.js';
import { sleep } from '../harness/spawn-node.js';
import { tempDir } from '../harness/temp-dir.js';
import { expectedView, readSourceDocuments } from './view-check.js';
import { capturingLogger, viewAsApplied, writeOrders } from './view-host-harness.js';

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
  const { logger, lines: warnings } = capturingLogger('warn');
  const write = (orders: [key: string, country: string][]) =>
    writeOrders(node.client, PARTITIONS, orders);
  /** Tasks that published a round since the host started. */
  const published = new Set<string>();
  const startHost = async (member = false) => {
    published.clear();
    host = await ViewHost.start({
      log: node.client,
      dataDir: `${dir.path}/views`,
      logger,
      limits: { fetchWaitMs: 50 },
      // As a cluster's member (takeover): output held until caught up, its own topic read back.
      placement: {
        ...standalonePlacement,
        takeover: member,
        published: (key) => published.add(key),
      },
    });
    return host;
  };
  /** Changes the view's kept state as a stopped process left it. */
  const withState = async (change: (state: ViewState) => Promise<void>) => {
    const state = new ViewState(`${dir.path}/views/${VIEW}@${version}/state.mdb`);
    try {
      await change(state);
    } finally {
      await state.close();
    }
  };
  /** The view topic's records from `from` (partition → offset) on: key and value (null: tombstone). */
  const viewRecordsFrom = async (from: Map<number, number>) => {
    const records: { key: string; value: string | null }[] = [];
    for (const [partition, offset] of from) {
      const read = await node.client.read(VIEW, partition, offset, { maxBytes: 1 << 20 });
      for (const batch of iterateBatches(read.batches)) {
        for (const record of decodeRecords(batch.bytes)) {
          if (record.offset < offset) continue;
          const value = record.value === null ? null : new TextDecoder().decode(record.value);
          records.push({ key: record.key, value });
        }
      }
    }
    return records;
  };
  const viewEnds = async () =>
    new Map(
      (await node.client.offsets())
        .filter((o) => o.topic === VIEW)
        .map((o) => [o.partition, o.endOffset]),
    );
  const viewTopic = () => viewAsApplied(node.client, VIEW, PARTITIONS);
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
    await host!.stop();
  });

  it("holds a discard's tombstones when the process died before the discard's next transaction", async () => {
    // The state as a process leaves it that died just after discard() committed (the source is
    // unchanged: nothing else would discard it again).
    await withState((state) => state.discard('groups'));
    const from = await viewEnds();
    await startHost();
    await expectRecomputed();
    const expected = expectedView(
      DEFINITION,
      await readSourceDocuments(node.client, 'orders', PARTITIONS),
    );
    const emptied = (await viewRecordsFrom(from)).filter(
      (r) => r.value === null && expected.has(r.key),
    );
    expect(emptied, 'tombstones of groups the view has, appended after the restart').toEqual([]);
    await host!.stop();
  });

  it("resumes from a grouping's state of layout 1, as tailbase start and as a cluster's member", async () => {
    // Layout 1: no `layout`, no `watched:<p>` in meta (a grouping's tables are the same).
    const toLayout1 = () =>
      withState((state) =>
        state.env.transaction(() => {
          for (const key of [...state.meta.getKeys()]) {
            if (key === 'layout' || key.startsWith('watch')) state.meta.remove(key);
          }
        }),
      );
    for (const member of [false, true]) {
      await toLayout1();
      await write([[`l${Number(member)}`, 'PT']]);
      warnings.length = 0;
      await startHost(member);
      const progress = await expectRecomputed();
      expect(progress.frontiers.every((f) => f.resumedFrom !== undefined)).toBe(true);
      expect(warnings).toEqual([]);
      await host!.stop();
    }
  });

  it('says a state that processed nothing was not resumed', async () => {
    // A view of a source that is empty when it first runs: its state holds meta, no position.
    const empty = { from: 'returns', groupBy: ['country'], aggregates: { n: 'count()' } };
    const declared = await node.client.append(
      VIEWS_TOPIC,
      0,
      encodeBatch([{ key: 'per_return', value: encode(empty), timestampMs: Date.now() }]),
    );
    const task = `per_return@${declared.baseOffset}`;
    const started = await startHost();
    const deadline = Date.now() + WAIT_MS;
    // Published: its first transaction is committed.
    while (!published.has(task)) {
      expect(Date.now()).toBeLessThan(deadline);
      await sleep(25);
    }
    await started.stop();
    const p = partitionFor('r1', PARTITIONS);
    await node.client.append(
      'returns',
      p,
      encodeBatch([{ key: 'r1', value: encode({ country: 'FR' }), timestampMs: Date.now() }]),
    );
    const restarted = await startHost();
    for (;;) {
      const progress = restarted.progress('per_return', declared.baseOffset);
      if (progress?.frontiers[p].frontier === 1) {
        expect(progress.frontiers.every((f) => f.resumedFrom === undefined)).toBe(true);
        break;
      }
      expect(Date.now(), JSON.stringify(progress)).toBeLessThan(deadline);
      await sleep(25);
    }
  });
});
