// Proves that a view whose source is another view applies the serve-nodes' epoch rule to its
// source's records: the source view's topic holds its processor's claims, a deposed writer's
// record (an epoch below the last claim) overwriting a document, one adding a document and one
// deleting a document, and a record with no epoch; the derived view equals the recomputation
// from what a serve-node serves of the source view (view-check.ts, fenced as a serve-node
// fences), and the source view's claims give the derived view's topic no record. Then again after
// the processors restart on their state (the greatest epoch per source partition is kept in the
// state), with a deposed writer's record appended while they were away.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openLogNode, type OpenLogNode } from '../../log-node/index.js';
import { startServeNode, type RunningServeNode } from '../../serve-node/index.js';
import {
  decodeRecords,
  encodeBatch,
  iterateBatches,
  type StoredRecord,
} from '../../shared/batch-codec.js';
import { partitionFor } from '../../shared/partitioner.js';
import { VIEWS_TOPIC } from '../../shared/topics.js';
import type { ViewDefinition } from '../../shared/view-definition.js';
import { epochHeader, epochOf } from '../../shared/view-epoch.js';
import { ViewHost } from '../../views/view-host.js';
import { appliedThrough } from '../harness/serve-fixture.js';
import { sleep } from '../harness/spawn-node.js';
import { tempDir } from '../harness/temp-dir.js';
import { silent } from './gateway-harness.js';
import { expectedView, readSourceDocuments } from './view-check.js';

const PARTITIONS = 2;
const WAIT_MS = 20_000;
const PAID: ViewDefinition = {
  from: 'orders',
  filter: 'status = paid',
  select: ['country', 'total'],
};
const BY_COUNTRY: ViewDefinition = {
  from: 'paid',
  groupBy: ['country'],
  aggregates: { n: 'count()', revenue: 'sum(total)' },
};

const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

describe('a view of a view fences its source', () => {
  const dir = tempDir('views-of-views-fence');
  let node: OpenLogNode;
  let host: ViewHost | null = null;
  let serve: RunningServeNode;
  const versions = new Map<string, number>();

  const startHost = async () => {
    host = await ViewHost.start({
      log: node.client,
      dataDir: `${dir.path}/views`,
      logger: silent,
      limits: { fetchWaitMs: 50 },
    });
  };
  const declare = async (name: string, definition: ViewDefinition) => {
    const { baseOffset } = await node.client.append(
      VIEWS_TOPIC,
      0,
      encodeBatch([{ key: name, value: encode(definition), timestampMs: Date.now() }]),
    );
    versions.set(name, baseOffset);
  };
  const endsOf = async (topic: string) =>
    (await node.client.offsets()).filter((o) => o.topic === topic);
  /** Waits until `view`'s processor has processed its source's log to its end. */
  const caughtUp = async (view: string, source: string) => {
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      const ends = await endsOf(source);
      const progress = host!.progress(view, versions.get(view)!);
      const through = ends.every(
        (e) => (progress?.frontiers[e.partition]?.frontier ?? -1) >= e.endOffset,
      );
      if (through && ends.length === PARTITIONS) return;
      expect(Date.now(), `${view}: ${JSON.stringify(progress)}`).toBeLessThan(deadline);
      await sleep(25);
    }
  };
  const records = async (topic: string, partition: number) => {
    const found: StoredRecord[] = [];
    const end = (await endsOf(topic)).find((o) => o.partition === partition)?.endOffset ?? 0;
    for (let offset = 0; offset < end;) {
      const read = await node.client.read(topic, partition, offset, { maxBytes: 1 << 20 });
      const from = offset;
      for (const batch of iterateBatches(read.batches)) {
        for (const record of decodeRecords(batch.bytes))
          if (record.offset >= from) found.push(record);
        offset = batch.header.baseOffset + batch.header.lastOffsetDelta + 1;
      }
      if (offset === from) break;
    }
    return found;
  };
  /** The greatest claim's epoch in the source view's topic. */
  const lastEpoch = async () => {
    const epochs = (await records('paid', 0)).map(epochOf).filter((e) => e?.claim === true);
    return Math.max(...epochs.map((e) => e!.epoch));
  };
  /** Appends to the source view's topic what a deposed writer (or anyone else) would. */
  const appendToSource = async (key: string, doc: unknown, epoch: number | null) => {
    await node.client.append(
      'paid',
      partitionFor(key, PARTITIONS),
      encodeBatch([
        {
          key,
          value: doc === null ? null : encode(doc),
          timestampMs: Date.now(),
          headers: epoch === null ? [] : [epochHeader(epoch)],
        },
      ]),
    );
  };
  const served = async (collection: string) => {
    const scan = await serve.client.scan(collection, { limit: 1000 });
    expect(scan.more).toBe(false);
    return new Map(scan.items.map((item) => [item.key, JSON.parse(item.json) as unknown]));
  };
  /** The derived view, served, equals the recomputation from the source view a serve-node serves. */
  const expectDerivedMatchesSource = async () => {
    await caughtUp('paid', 'orders');
    await caughtUp('by_country', 'paid');
    for (const topic of ['paid', 'by_country']) {
      const ends = await endsOf(topic);
      await appliedThrough(
        serve.client,
        topic,
        Object.fromEntries(ends.map((e) => [e.partition, e.endOffset - 1])),
      );
    }
    const source = await readSourceDocuments(node.client, 'paid', PARTITIONS, { fenced: true });
    const servedSource = await served('paid');
    expect(new Map([...source].map(([key, { doc }]) => [key, doc]))).toEqual(servedSource);
    expect(await served('by_country')).toEqual(expectedView(BY_COUNTRY, source));
    for (let partition = 0; partition < PARTITIONS; partition++) {
      const outputKeys = (await records('by_country', partition))
        .filter((record) => epochOf(record)?.claim !== true)
        .map((record) => record.key);
      expect(outputKeys.filter((key) => key.startsWith('\u0001'))).toEqual([]);
    }
  };

  beforeAll(async () => {
    node = await openLogNode({
      dataDir: `${dir.path}/log`,
      partitions: PARTITIONS,
      logger: silent,
      kafka: { host: '127.0.0.1', port: 0 },
    });
    serve = await startServeNode({
      dataDir: `${dir.path}/serve`,
      port: 0,
      logUrls: [`kafka://127.0.0.1:${node.kafkaPort}`],
      partitions: [0, 1],
      logger: silent,
    });
  });

  afterAll(async () => {
    await host?.stop();
    await serve?.stop();
    await node?.stop();
    dir.cleanup();
  });

  it("skips a deposed writer's records and the claims in its source view's topic", async () => {
    for (let i = 0; i < 12; i++) {
      const key = `o${i}`;
      await node.client.append(
        'orders',
        partitionFor(key, PARTITIONS),
        encodeBatch([
          {
            key,
            value: encode({ country: ['FR', 'DE', 'US'][i % 3], total: i + 1, status: 'paid' }),
            timestampMs: Date.now(),
          },
        ]),
      );
    }
    await declare('paid', PAID);
    await declare('by_country', BY_COUNTRY);
    await startHost();
    await expectDerivedMatchesSource();
    const epoch = await lastEpoch();
    // A deposed writer's stale output: an overwrite, a new document and a delete; and a record
    // without an epoch (someone else's). None is what a reader of `paid` sees.
    await appendToSource('o0', { country: 'ZZ', total: 1000 }, epoch - 1);
    await appendToSource('stale', { country: 'ZZ', total: 7 }, epoch - 1);
    await appendToSource('o1', null, epoch - 1);
    await appendToSource('stranger', { country: 'YY', total: 3 }, null);
    await expectDerivedMatchesSource();
    expect((await served('by_country')).has(JSON.stringify(['ZZ']))).toBe(false);
  });

  it('skips the same records after a restart on its state', async () => {
    const epoch = await lastEpoch();
    await host!.stop();
    host = null;
    // While no processor runs, a deposed writer appends (below the last claim it has seen).
    await appendToSource('o2', { country: 'ZZ', total: 2000 }, epoch - 1);
    await appendToSource('late', { country: 'ZZ', total: 9 }, epoch - 1);
    await startHost();
    await expectDerivedMatchesSource();
    expect((await served('by_country')).has(JSON.stringify(['ZZ']))).toBe(false);
  });
});
