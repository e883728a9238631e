// Proves recovery on start: a torn tail (cut anywhere, junk appended) keeps exactly the whole
// batches before the cut and appends continue at the right offset; a write torn in pieces (its
// start lost, its end kept) past the recovery point is cut, and below it (or with no recovery
// point) stops the partition; a corrupt batch before the tail stops only its partition with a
// clear error; a missing or damaged index is rebuilt. A spawned log-node is reached by its Kafka
// listener, one opened here by its in-process binding.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkBatch, encodeBatch, iterateBatches, stampBatch } from '../../shared/batch-codec.js';
import { createLogger } from '../../shared/logger.js';
import { TailbaseError } from '../../shared/errors.js';
import type { LogClient } from '../../shared/log-api.js';
import { type OpenLogNode, openLogNode } from '../../log-node/index.js';
import { RECOVERY_POINT_FILE } from '../../log-node/recovery-point.js';
import {
  kafkaFace,
  keysIn,
  lastOffsetOf,
  partitionDirOf,
  producerBytes,
  readPartition,
  readSegmentFiles,
  type Random,
  seededRandom,
  spawnNode,
  tempDir,
  type TempDir,
  testSeed,
} from '../harness/index.js';

const logger = createLogger('test', 'silent');
const seed = testSeed('log-node recovery');
const random = seededRandom(seed);
const TOPIC = 'docs';
/** Partition 0's active segment, relative to the data directory. */
const ACTIVE = path.join(partitionDirOf('', TOPIC, 0), `${'0'.padStart(20, '0')}.log`);

/** Keys of the partition (of 2) as Kafka's partitioner places them: the listener refuses others. */
function batchOf(random: Random, tag: string, partition = 0): Buffer {
  const count = random.int(1, 12);
  return encodeBatch(
    keysIn(partition, 2, count, `${tag}-`).map((key, i) => ({
      key,
      value: Buffer.from(JSON.stringify({ tag, i, pad: 'y'.repeat(random.int(0, 120)) })),
      timestampMs: 1_700_000_000_000 + i,
    })),
  );
}

async function appendAll(client: LogClient, partition: number, count: number, tag: string) {
  for (let n = 0; n < count; n++) {
    await client.append(TOPIC, partition, batchOf(random, `${tag}${n}`, partition));
  }
}

/** TOPIC's partition in the node's status. */
function statusOf(running: OpenLogNode, partition: number) {
  const status = running.node
    .status()
    .partitions.find((p) => p.topic === TOPIC && p.partition === partition);
  expect(status, `${TOPIC}:${partition} in the status`).toBeDefined();
  return status!;
}

/** TOPIC's partition 0 offsets. */
async function offsetsOf(client: LogClient) {
  const offsets = (await client.offsets()).find((p) => p.topic === TOPIC && p.partition === 0);
  expect(offsets, `${TOPIC}:0 in the offsets`).toBeDefined();
  return offsets!;
}

async function expectError(promise: Promise<unknown>, status: number, code: string) {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(TailbaseError);
  expect({ status: (error as TailbaseError).status, code: (error as TailbaseError).code }).toEqual({
    status,
    code,
  });
  return error as TailbaseError;
}

let pristine: TempDir;
beforeAll(async () => {
  // One real process writes the log every case below starts from, then stops cleanly.
  pristine = tempDir('recovery-pristine');
  const kafka = await kafkaFace();
  const node = await spawnNode('log-node', [
    ...['--data', pristine.path, '--port', '0', '--partitions', '2'],
    ...kafka.args,
  ]);
  try {
    const client = await kafka.connect();
    await appendAll(client, 0, 25, 'p0-');
    await appendAll(client, 1, 5, 'p1-');
    client.close();
  } finally {
    await node.stop();
  }
});
afterAll(() => pristine.cleanup());

function copyOfPristine(prefix: string): TempDir {
  const dir = tempDir(prefix);
  fs.cpSync(pristine.path, dir.path, { recursive: true });
  return dir;
}

/**
 * A clean stop stored the recovery point at the end of the file: every byte was acknowledged. A
 * test cutting that file stands for a crash mid-write only once the point no longer claims the
 * cut bytes, as in a directory from before recovery points (a tail that nothing follows is cut).
 */
function forgetRecoveryPoint(dataDir: string): void {
  fs.rmSync(path.join(partitionDirOf(dataDir, TOPIC, 0), RECOVERY_POINT_FILE));
}

describe('torn tail', () => {
  it('keeps exactly the whole batches before a random cut plus junk, then appends after them', async () => {
    const original = fs.readFileSync(path.join(pristine.path, ACTIVE));
    const [segment] = readSegmentFiles(partitionDirOf(pristine.path, TOPIC, 0));
    const ends = segment.batches.map((b) => ({
      endByte: 0,
      endOffset: lastOffsetOf(b.header) + 1,
      bytes: b.bytes,
    }));
    let at = 0;
    for (const end of ends) end.endByte = at += end.bytes.length;
    expect(at).toBe(original.length);

    for (let trial = 0; trial < 16; trial++) {
      const dir = copyOfPristine('torn');
      forgetRecoveryPoint(dir.path);
      try {
        // Cuts land inside headers, inside records and on boundaries; a fifth of trials add no junk.
        const cut = trial === 0 ? original.length : random.int(0, original.length);
        const junk = random.next() < 0.2 ? Buffer.alloc(0) : random.bytes(random.int(1, 400));
        fs.writeFileSync(
          path.join(dir.path, ACTIVE),
          Buffer.concat([original.subarray(0, cut), junk]),
        );
        const kept = ends.filter((e) => e.endByte <= cut);
        const keptBytes = kept.at(-1)?.endByte ?? 0;
        const endOffset = kept.at(-1)?.endOffset ?? 0;

        const running = await openLogNode({ dataDir: dir.path, logger });
        try {
          const client = running.client;
          const status = statusOf(running, 0);
          const context = `trial ${trial}: cut ${cut} of ${original.length}, junk ${junk.length}`;
          expect(status.error, context).toBeUndefined();
          expect(status.truncatedBytesOnLoad, context).toBe(cut + junk.length - keptBytes);
          const read = await readPartition(client, TOPIC, 0);
          expect(read.endOffset, context).toBe(endOffset);
          expect(
            read.batches.map((b) => b.bytes.toString('hex')),
            context,
          ).toEqual(kept.map((e) => e.bytes.toString('hex')));
          const ack = await client.append(TOPIC, 0, batchOf(random, `after${trial}`));
          expect(ack.baseOffset, context).toBe(endOffset);
          expect(fs.statSync(path.join(dir.path, ACTIVE)).size).toBe(
            keptBytes +
              (await readPartition(client, TOPIC, 0, { fromOffset: endOffset })).batches[0].bytes
                .length,
          );
        } finally {
          await running.stop();
        }
      } finally {
        dir.cleanup();
      }
    }
  });

  it('a real process recovers a torn tail the same way', async () => {
    const dir = copyOfPristine('torn-real');
    forgetRecoveryPoint(dir.path);
    try {
      const file = path.join(dir.path, ACTIVE);
      const original = fs.readFileSync(file);
      const [segment] = readSegmentFiles(partitionDirOf(dir.path, TOPIC, 0));
      const lastWhole = segment.batches.at(-2)!;
      const cut = original.length - Math.ceil(segment.batches.at(-1)!.bytes.length / 2);
      fs.writeFileSync(file, Buffer.concat([original.subarray(0, cut), random.bytes(50)]));
      const kafka = await kafkaFace();
      const node = await spawnNode('log-node', ['--data', dir.path, '--port', '0', ...kafka.args]);
      const client = await kafka.connect();
      try {
        const offsets = await offsetsOf(client);
        expect(offsets.endOffset).toBe(lastOffsetOf(lastWhole.header) + 1);
        const ack = await client.append(TOPIC, 0, batchOf(random, 'after-real'));
        expect(ack.baseOffset).toBe(offsets.endOffset);
      } finally {
        client.close();
        await node.stop();
      }
    } finally {
      dir.cleanup();
    }
  });
});

describe('acknowledged bytes missing below the recovery point', () => {
  it('stops the partition, whether the file is cut short or ends in a damaged batch, and cuts nothing', async () => {
    const original = fs.readFileSync(path.join(pristine.path, ACTIVE));
    const [segment] = readSegmentFiles(partitionDirOf(pristine.path, TOPIC, 0));
    const lastStart = original.length - segment.batches.at(-1)!.bytes.length;
    for (const [name, bytes, message] of [
      ['cut on a batch boundary', original.subarray(0, lastStart), /before the recovery point/],
      [
        'cut inside the last batch',
        original.subarray(0, original.length - 7),
        /ends the file below the recovery point/,
      ],
    ] as const) {
      const dir = copyOfPristine('acked-missing');
      try {
        fs.writeFileSync(path.join(dir.path, ACTIVE), bytes);
        const running = await openLogNode({ dataDir: dir.path, logger });
        try {
          expect(statusOf(running, 0).error, name).toMatch(message);
          expect(statusOf(running, 1).error, name).toBeUndefined();
          expect(fs.statSync(path.join(dir.path, ACTIVE)).size, name).toBe(bytes.length);
        } finally {
          await running.stop();
        }
      } finally {
        dir.cleanup();
      }
    }
  });
});

describe('a write torn in pieces', () => {
  /** Batches of the unfinished round: small, so it spans several sectors past the lost ones. */
  const ROUND_BATCHES = 40;

  /**
   * Partition 0 as a power cut mid-round could leave it: after the acknowledged batches (all below
   * the recovery point the clean stop stored), an unfinished round of small batches whose first
   * sectors were lost (zeros) and whose later ones were kept. `lostAcked` zeroes a sector of the
   * acknowledged batches too. Returns the bytes and offsets recovery must keep.
   */
  function tearAfterPristine(dataDir: string, lostAcked: boolean) {
    const file = path.join(dataDir, ACTIVE);
    const original = fs.readFileSync(file);
    const [segment] = readSegmentFiles(partitionDirOf(dataDir, TOPIC, 0));
    const endOffset = lastOffsetOf(segment.batches.at(-1)!.header) + 1;
    const round: Buffer[] = [];
    for (let n = 0, offset = endOffset; n < ROUND_BATCHES; n++) {
      const batch = encodeBatch([
        { key: `torn-${n}`, value: Buffer.from(`{"n":${n}}`), timestampMs: 1_700_000_000_000 },
      ]);
      stampBatch(batch, offset, 0);
      offset += 1;
      round.push(batch);
    }
    const bytes = Buffer.concat([original, ...round]);
    const lostFrom = original.length;
    const lostTo = (Math.floor(lostFrom / 512) + 2) * 512;
    bytes.fill(0, lostFrom, lostTo);
    if (lostAcked) bytes.fill(0, 512, 1024);
    expect(
      checkBatch(bytes, bytes.length - round[ROUND_BATCHES - 1].length).ok,
      'the last batch was kept',
    ).toBe(true);
    fs.writeFileSync(file, bytes);
    return { keptBytes: original.length, cutBytes: bytes.length - original.length, endOffset };
  }

  it('past the recovery point is cut back to the acknowledged batches, which are served', async () => {
    const dir = copyOfPristine('torn-pieces');
    try {
      const { keptBytes, cutBytes, endOffset } = tearAfterPristine(dir.path, false);
      const running = await openLogNode({ dataDir: dir.path, logger });
      try {
        const status = statusOf(running, 0);
        expect(status.error).toBeUndefined();
        expect(status.truncatedBytesOnLoad).toBe(cutBytes);
        const client = running.client;
        expect((await readPartition(client, TOPIC, 0)).endOffset).toBe(endOffset);
        const ack = await client.append(TOPIC, 0, batchOf(random, 'after-tear'));
        expect(ack.baseOffset).toBe(endOffset);
        expect(fs.statSync(path.join(dir.path, ACTIVE)).size).toBeGreaterThan(keptBytes);
      } finally {
        await running.stop();
      }
    } finally {
      dir.cleanup();
    }
  });

  it('stops the partition when acknowledged bytes below the recovery point are damaged too, or no recovery point exists', async () => {
    for (const damage of ['acknowledged', 'no recovery point'] as const) {
      const dir = copyOfPristine('torn-pieces-acked');
      try {
        tearAfterPristine(dir.path, damage === 'acknowledged');
        if (damage === 'no recovery point') {
          forgetRecoveryPoint(dir.path);
        }
        const running = await openLogNode({ dataDir: dir.path, logger });
        try {
          expect(statusOf(running, 0).error, damage).toMatch(
            damage === 'acknowledged'
              ? /followed by valid data below the recovery point/
              : /followed by valid data and no recovery point/,
          );
          expect(statusOf(running, 1).error, damage).toBeUndefined();
        } finally {
          await running.stop();
        }
      } finally {
        dir.cleanup();
      }
    }
  });
});

/** Flips one bit of a byte in `regionBytes` of an early batch of partition 0; returns where. */
function corruptEarlyBatch(dataDir: string, regionBytes: [number, number | 'end']): string {
  const file = path.join(dataDir, ACTIVE);
  const bytes = fs.readFileSync(file);
  const [segment] = readSegmentFiles(partitionDirOf(dataDir, TOPIC, 0));
  const victim = random.int(0, 5);
  const start = segment.batches.slice(0, victim).reduce((sum, b) => sum + b.bytes.length, 0);
  const size = segment.batches[victim].bytes.length;
  const inBatch = random.int(regionBytes[0], regionBytes[1] === 'end' ? size - 1 : regionBytes[1]);
  bytes[start + inBatch] ^= 1 << random.int(0, 7);
  fs.writeFileSync(file, bytes);
  return `batch ${victim}, byte ${inBatch}`;
}

// Every byte the log can check: the base offset (against its position in the log), the length
// (the batches after it must still be found), the magic, the CRC and everything it covers. Only
// the leader epoch (bytes 12..15) is neither checked nor covered.
const CHECKED_REGIONS: [number, number | 'end'][] = [
  [0, 7],
  [8, 11],
  [16, 20],
  [21, 'end'],
];

describe('corruption before the tail', () => {
  it('fails the partition for a flipped bit in any checked field of an early batch', async () => {
    for (const region of [...CHECKED_REGIONS, ...CHECKED_REGIONS]) {
      const dir = copyOfPristine('corrupt-field');
      try {
        const context = corruptEarlyBatch(dir.path, region);
        const running = await openLogNode({ dataDir: dir.path, logger });
        try {
          const failed = running.node.status().partitions.filter((p) => p.error !== undefined);
          expect(
            failed.map(({ topic, partition }) => ({ topic, partition })),
            context,
          ).toEqual([{ topic: TOPIC, partition: 0 }]);
          expect(statusOf(running, 0).error, context).toMatch(/corrupt|base offset/);
          expect(statusOf(running, 1).error, context).toBeUndefined();
        } finally {
          await running.stop();
        }
      } finally {
        dir.cleanup();
      }
    }
  });

  it('stops that partition with partition_failed and keeps serving the others', async () => {
    const dir = copyOfPristine('corrupt');
    try {
      const context = corruptEarlyBatch(dir.path, random.pick(CHECKED_REGIONS));
      const kafka = await kafkaFace();
      const node = await spawnNode('log-node', ['--data', dir.path, '--port', '0', ...kafka.args], {
        waitReady: false,
      });
      const client = await kafka.connect();
      try {
        const ready = await fetch(`${node.url}/readyz`);
        expect(ready.status, context).toBe(503);
        expect(await ready.json()).toMatchObject({
          failedPartitions: [{ topic: TOPIC, partition: 0 }],
        });
        await expectError(client.read(TOPIC, 0, 0), 503, 'partition_failed');
        const failed = await expectError(
          client.append(TOPIC, 0, batchOf(random, 'x')),
          503,
          'partition_failed',
        );
        // The cause is for operators (status, log), not for an answer that may reach a client.
        expect(failed.message).not.toMatch(/corrupt|\.log|\//);
        const status = (await (await fetch(`${node.url}/internal/status`)).json()) as {
          partitions: { topic: string; partition: number; error?: string }[];
        };
        const partitionStatus = (partition: number) =>
          status.partitions.find((p) => p.topic === TOPIC && p.partition === partition)!;
        expect(partitionStatus(0).error, context).toMatch(/corrupt|base offset/);
        expect(partitionStatus(1)).toBeDefined();
        expect(partitionStatus(1).error).toBeUndefined();
        const before = await readPartition(client, TOPIC, 1);
        expect(before.batches.length).toBe(5);
        const ack = await client.append(TOPIC, 1, batchOf(random, 'p1-after', 1));
        expect(ack.baseOffset).toBe(before.endOffset);
      } finally {
        client.close();
        await node.stop();
      }
    } finally {
      dir.cleanup();
    }
  });
});

describe('offset index', () => {
  it('rebuilds a deleted or damaged index of a closed segment', async () => {
    const dir = tempDir('index');
    try {
      const options = {
        dataDir: dir.path,
        partitions: 1,
        segmentBytesMax: 4096,
        batchBytesMax: 4096,
        indexIntervalBytes: 512,
        logger,
      };
      let running = await openLogNode(options);
      const sent: Buffer[] = [];
      for (let n = 0; n < 40; n++) {
        const batch = batchOf(random, `i${n}`);
        sent.push(batch);
        await running.client.append(TOPIC, 0, batch);
      }
      await running.stop();
      const partitionDir = partitionDirOf(dir.path, TOPIC, 0);
      const indexes = fs
        .readdirSync(partitionDir)
        .filter((name) => name.endsWith('.index'))
        .sort();
      expect(indexes.length).toBeGreaterThanOrEqual(3);
      const originals = new Map(
        indexes.map((name) => [name, fs.readFileSync(path.join(partitionDir, name))]),
      );
      expect(originals.get(indexes[0])!.length).toBeGreaterThan(8);
      fs.rmSync(path.join(partitionDir, indexes[0]));
      fs.truncateSync(path.join(partitionDir, indexes[1]), originals.get(indexes[1])!.length - 3);
      fs.writeFileSync(
        path.join(partitionDir, indexes[2]),
        Buffer.alloc(originals.get(indexes[2])!.length, 0xff),
      );

      running = await openLogNode(options);
      try {
        const client = running.client;
        const { endOffset } = await offsetsOf(client);
        // A one-byte read answers the single batch holding the offset: every offset finds its own.
        for (let offset = 0; offset < endOffset; offset++) {
          const page = await client.read(TOPIC, 0, offset, { maxBytes: 1 });
          const batches = [...iterateBatches(page.batches)];
          expect(batches.length, `offset ${offset}`).toBe(1);
          expect(batches[0].header.baseOffset, `offset ${offset}`).toBeLessThanOrEqual(offset);
          expect(lastOffsetOf(batches[0].header), `offset ${offset}`).toBeGreaterThanOrEqual(
            offset,
          );
        }
        const all = await readPartition(client, TOPIC, 0);
        expect(all.batches.map((b) => producerBytes(b.bytes).toString('hex'))).toEqual(
          sent.map((b) => producerBytes(b).toString('hex')),
        );
      } finally {
        await running.stop();
      }
      for (const [name, bytes] of originals) {
        expect(
          fs.readFileSync(path.join(partitionDir, name)).equals(bytes),
          `${name} rebuilt`,
        ).toBe(true);
      }
    } finally {
      dir.cleanup();
    }
  });
});
