// Proves that a fenced record does not survive compaction as a key's last: a paused owner that
// wakes appends an old value of a group with its old epoch after the new owner's claim; the new
// owner reads its own topic back, finds it and appends its current value of that key again, so
// after the log-node compacts the view's topic, a serve-node rebuilt from the compacted topic
// holds the group at its current value (without the owner's append it held no such group: the
// fenced record, which it skips, was the key's only record left). Also that an owner resuming
// from the state it kept reads back from where it stopped, so a fenced record appended while it
// was away is found too, and that a projection appends again the document its state keeps for
// a fenced key. A log-node in-process with small segments, the view processors on its
// in-process binding placed as a cluster's member places them (output held until caught up).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openLogNode, type OpenLogNode } from '../../log-node/index.js';
import { startServeNode, type RunningServeNode } from '../../serve-node/index.js';
import { decodeRecords, encodeBatch, iterateBatches } from '../../shared/batch-codec.js';
import { partitionFor } from '../../shared/partitioner.js';
import { VIEWS_TOPIC } from '../../shared/topics.js';
import { epochHeader, epochOf } from '../../shared/view-epoch.js';
import { standalonePlacement, type ViewPlacement } from '../../views/view-placement.js';
import { ViewHost } from '../../views/view-host.js';
import { appliedThrough } from '../harness/serve-fixture.js';
import { sleep } from '../harness/spawn-node.js';
import { tempDir } from '../harness/temp-dir.js';
import { silent } from './gateway-harness.js';
import { expectedView, readSourceDocuments } from './view-check.js';

const PARTITIONS = 2;
const VIEW = 'per_country';
const DEFINITION = { from: 'orders', groupBy: ['country'], aggregates: { n: 'count()' } };
const WAIT_MS = 20_000;
const FR = JSON.stringify(['FR']);

/** Every task here, placed as a cluster member is dealt a task: output held until caught up. */
const memberPlacement: ViewPlacement = { ...standalonePlacement, takeover: true };

const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

describe("a fenced record is not a key's last record after compaction", () => {
  const dir = tempDir('views-fenced-compaction');
  let node: OpenLogNode;
  const hosts: ViewHost[] = [];
  let replica: RunningServeNode | null = null;
  let sequence = 0;

  const write = async (country: string, count: number) => {
    for (let i = 0; i < count; i++) {
      const key = `o${sequence++}`;
      await node.client.append(
        'orders',
        partitionFor(key, PARTITIONS),
        encodeBatch([{ key, value: encode({ country }), timestampMs: Date.now() }]),
      );
    }
  };
  const startHost = async (name: string) => {
    const host = await ViewHost.start({
      log: node.client,
      dataDir: `${dir.path}/${name}`,
      logger: silent,
      placement: memberPlacement,
      limits: { fetchWaitMs: 50 },
    });
    hosts.push(host);
    return host;
  };
  /** The records of a view partition: offset, key, epoch (null: none), claim or not. */
  const viewRecords = async (partition: number, view = VIEW) => {
    const records: { offset: number; key: string; epoch: number | null; claim: boolean }[] = [];
    const end = (await node.client.offsets()).find(
      (o) => o.topic === view && o.partition === partition,
    )!.endOffset;
    for (let offset = 0; offset < end;) {
      const read = await node.client.read(view, partition, offset, { maxBytes: 1 << 20 });
      const from = offset;
      for (const batch of iterateBatches(read.batches)) {
        for (const record of decodeRecords(batch.bytes)) {
          if (record.offset < from) continue;
          const said = epochOf(record);
          records.push({
            offset: record.offset,
            key: record.key,
            epoch: said?.epoch ?? null,
            claim: said?.claim ?? false,
          });
        }
        offset = batch.header.baseOffset + batch.header.lastOffsetDelta + 1;
      }
      if (offset === from) break;
    }
    return records;
  };
  /** The greatest claim's epoch in partition 0 of the view's topic. */
  const lastEpoch = async (view = VIEW) =>
    Math.max(...(await viewRecords(0, view)).filter((r) => r.claim).map((r) => r.epoch!));
  const caughtUp = async (host: ViewHost, version: number, view = VIEW) => {
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      const ends = (await node.client.offsets()).filter((o) => o.topic === 'orders');
      const progress = host.progress(view, version);
      const through = ends.every(
        (e) => (progress?.frontiers[e.partition]?.frontier ?? -1) >= e.endOffset,
      );
      if (through) return progress!;
      expect(Date.now(), JSON.stringify(progress)).toBeLessThan(deadline);
      await sleep(25);
    }
  };
  /** What a paused owner of epoch `epoch` appends when it wakes: FR as it had it. */
  const appendAsSleeper = async (epoch: number, n: number) => {
    const { lastOffset } = await node.client.append(
      VIEW,
      partitionFor(FR, PARTITIONS),
      encodeBatch([
        {
          key: FR,
          value: encode({ country: 'FR', n }),
          timestampMs: Date.now(),
          headers: [epochHeader(epoch)],
        },
      ]),
    );
    return lastOffset;
  };
  /** Waits until FR's last record in the view's topic is past `offset`, of epoch `epoch`. */
  const reappended = async (offset: number, epoch: number) => {
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      const last = (await viewRecords(partitionFor(FR, PARTITIONS)))
        .filter((r) => r.key === FR)
        .at(-1)!;
      if (last.offset > offset && last.epoch === epoch) return;
      expect(Date.now(), `FR's last record: ${JSON.stringify(last)}`).toBeLessThan(deadline);
      await sleep(25);
    }
  };

  beforeAll(async () => {
    node = await openLogNode({
      dataDir: `${dir.path}/log`,
      partitions: PARTITIONS,
      segmentBytesMax: 1024,
      batchBytesMax: 1024,
      cleanerMinDirtyRatio: 0,
      cleanerIntervalMs: 3_600_000,
      logger: silent,
      kafka: { host: '127.0.0.1', port: 0 },
    });
  });

  afterAll(async () => {
    await replica?.stop();
    for (const host of hosts) await host.stop();
    await node?.stop();
    dir.cleanup();
  });

  it("keeps the owner's value of a key as its last record when a sleeper wrote after the claim", async () => {
    await write('FR', 5);
    await write('DE', 5);
    const version = (
      await node.client.append(
        VIEWS_TOPIC,
        0,
        encodeBatch([{ key: VIEW, value: encode(DEFINITION), timestampMs: Date.now() }]),
      )
    ).baseOffset;
    // The first owner runs the view, and is paused: the second takes it over (a claim).
    const first = await startHost('first');
    await caughtUp(first, version);
    const sleeperEpoch = await lastEpoch();
    await first.stop();
    const second = await startHost('second');
    await caughtUp(second, version);
    const ownerEpoch = await lastEpoch();
    expect(ownerEpoch).toBeGreaterThan(sleeperEpoch);
    // The sleeper wakes and appends FR as it had it, with its epoch: fenced, and the owner's
    // value of FR is appended again after it.
    const fenced = await appendAsSleeper(sleeperEpoch, 1);
    await reappended(fenced, ownerEpoch);
    await expectCompactedReplica(second, version);
  });

  it('finds, when it resumes from its state, a fenced record appended while it was away', async () => {
    const version = await currentVersion();
    const owner = hosts.at(-1)!;
    await owner.stop();
    hosts.pop();
    // While no processor runs: the sleeper's late record, after the owner's claim.
    const ownerEpoch = await lastEpoch();
    const fenced = await appendAsSleeper(ownerEpoch - 1, 2);
    // The owner comes back on its own state: a new claim, and it reads back from where it was.
    const back = await startHost('second');
    const progress = await caughtUp(back, version);
    expect(progress.frontiers.every((f) => f.resumedFrom !== undefined)).toBe(true);
    await reappended(fenced, await lastEpoch());
    await expectCompactedReplica(back, version);
  });

  it("appends again a projection's current document of a key whose last record is fenced", async () => {
    const copy = 'order_copy';
    const version = (
      await node.client.append(
        VIEWS_TOPIC,
        0,
        encodeBatch([
          {
            key: copy,
            // Only FR's few: each output batch under the log-node's 1 KiB batches here.
            value: encode({ from: 'orders', select: ['country'], filter: 'country = "FR"' }),
            timestampMs: Date.now(),
          },
        ]),
      )
    ).baseOffset;
    const owner = hosts.at(-1)!;
    await caughtUp(owner, version, copy);
    // A record of o0 no processor of the view wrote (no epoch): fenced, and o0's document, kept
    // in the projection's state, is appended again after it.
    const { lastOffset: fenced } = await node.client.append(
      copy,
      partitionFor('o0', PARTITIONS),
      encodeBatch([{ key: 'o0', value: encode({ country: 'XX' }), timestampMs: Date.now() }]),
    );
    const ownerEpoch = await lastEpoch(copy);
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      const last = (await viewRecords(partitionFor('o0', PARTITIONS), copy))
        .filter((r) => r.key === 'o0')
        .at(-1)!;
      if (last.offset > fenced && last.epoch === ownerEpoch) break;
      expect(Date.now(), `o0's last record: ${JSON.stringify(last)}`).toBeLessThan(deadline);
      await sleep(25);
    }
    const read = await node.client.read(copy, partitionFor('o0', PARTITIONS), fenced + 1, {
      maxBytes: 1 << 20,
    });
    const appended = [...iterateBatches(read.batches)]
      .flatMap((b) => decodeRecords(b.bytes))
      .filter((r) => r.key === 'o0' && r.offset > fenced);
    const source = await readSourceDocuments(node.client, 'orders', PARTITIONS);
    expect(appended.map((r) => JSON.parse(new TextDecoder().decode(r.value!)))).toEqual([
      { country: source.get('o0')!.doc.country },
    ]);
  });

  const currentVersion = async () => {
    const read = await node.client.read(VIEWS_TOPIC, 0, 0, { maxBytes: 1 << 20 });
    for (const batch of iterateBatches(read.batches)) {
      for (const record of decodeRecords(batch.bytes))
        if (record.key === VIEW) return record.offset;
    }
    throw new Error('no view declared');
  };

  /**
   * Compacts the view's topic once FR's records are in closed segments (only FR's last record
   * stays), then rebuilds a serve-node from it: it
   * holds the view the source gives.
   */
  const expectCompactedReplica = async (owner: ViewHost, version: number) => {
    // Output records of another group in FR's view partition, a round each, past a segment.
    const frPartition = partitionFor(FR, PARTITIONS);
    const beside = ['DE', 'IT', 'ES', 'NL', 'PL'].find(
      (c) => partitionFor(JSON.stringify([c]), PARTITIONS) === frPartition,
    )!;
    for (let round = 0; round < 20; round++) {
      await write(beside, 1);
      await caughtUp(owner, version);
    }
    await node.cleaner.runOnce();
    const frRecords = (await viewRecords(partitionFor(FR, PARTITIONS))).filter((r) => r.key === FR);
    expect(frRecords.length, 'compaction left one FR record').toBe(1);
    await replica?.stop();
    replica = await startServeNode({
      dataDir: tempDir('views-fenced-replica').path,
      port: 0,
      logUrls: [`kafka://127.0.0.1:${node.kafkaPort}`],
      partitions: [0, 1],
      logger: silent,
    });
    const ends = (await node.client.offsets()).filter((o) => o.topic === VIEW);
    await appliedThrough(
      replica.client,
      VIEW,
      Object.fromEntries(ends.map((e) => [e.partition, e.endOffset - 1])),
    );
    const expected = expectedView(
      DEFINITION,
      await readSourceDocuments(node.client, 'orders', PARTITIONS),
    );
    for (const [key, value] of expected) {
      const got = await replica.client.get(VIEW, key);
      expect(got.doc === null ? null : JSON.parse(got.doc.json), key).toEqual(value);
    }
  };
});
