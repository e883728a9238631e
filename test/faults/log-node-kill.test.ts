// Proves invariant 1 and 2 under kill -9: every acknowledged append reads back after a restart
// with exactly the bytes sent, offsets stay dense from 0 in every topic-partition, every batch on
// disk is whole and valid and was sent exactly once, and an idempotent producer's retry after the
// crash is not doubled (one producer id per writer, its sequences per topic-partition). The
// writers and the checks reach the log-node by its Kafka listener.
import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { encodeBatch, type LogRecord } from '../../shared/batch-codec.js';
import { KafkaLogClient } from '../../shared/kafka-log/index.js';
import type { LogClient } from '../../shared/log-api.js';
import { freePort } from '../harness/free-port.js';
import { keysIn } from '../harness/keys.js';
import {
  lastOffsetOf,
  partitionDirOf,
  producerBytes,
  readPartition,
  readSegmentFiles,
  seededRandom,
  sleep,
  spawnNode,
  type SpawnedNode,
  tempDir,
  type TempDir,
  testSeed,
} from '../harness/index.js';

const PARTITIONS = 4;
/** Collection topics the writers spread their batches over. */
const TOPICS = ['c0', 'c1', 'c2', 'c3'];
const WRITERS = 8;
const KILLS = 3;
const RECORD_COUNTS = [1, 1, 3, 20, 150] as const;

interface Ack {
  topic: string;
  partition: number;
  baseOffset: number;
  lastOffset: number;
  sent: Buffer;
}

/** A writer's idempotent producer in one topic-partition: sequences count its records there. */
interface Producer {
  producerId: number;
  producerEpoch: number;
  nextSequence: number;
  /** A batch whose append failed with the crash: it may or may not be in the log. */
  pending: Buffer | null;
}

const digest = (bytes: Uint8Array) => createHash('sha1').update(producerBytes(bytes)).digest('hex');

let dir: TempDir | null = null;
let node: SpawnedNode | null = null;
afterEach(async () => {
  await node?.kill();
  dir?.cleanup();
  node = null;
  dir = null;
});

describe('log-node under kill -9', () => {
  it('loses no acknowledged append and keeps offsets dense across repeated kills', async () => {
    const seed = testSeed('log-node kill -9');
    const random = seededRandom(seed);
    dir = tempDir('kill');
    const kafkaPort = await freePort();
    const args = [
      ...['--data', dir.path, '--port', '0', '--partitions', String(PARTITIONS)],
      ...['--segment-bytes-max', String(256 * 1024), '--batch-bytes-max', String(64 * 1024)],
      ...['--cleanup-policy', 'delete'],
      ...['--kafka-port', String(kafkaPort)],
    ];
    const connect = () => KafkaLogClient.connect({ bootstrap: [`127.0.0.1:${kafkaPort}`] });
    const acks: Ack[] = [];
    const sent = new Set<string>();
    const producers = new Map<string, Producer>();
    let unacknowledged = 0;

    /** Each writer's producer id, handed out once and kept across the kills. */
    const producerIds: { producerId: number; producerEpoch: number }[] = [];
    for (let round = 0; round < KILLS; round++) {
      node = await spawnNode('log-node', args);
      const client = await connect();
      if (round === 0) {
        for (const topic of TOPICS) await client.ensureTopic(topic);
        for (let w = 0; w < WRITERS; w++) producerIds.push(await client.initProducerId());
        expect(new Set(producerIds.map((p) => p.producerId)).size).toBe(WRITERS);
      }
      if (round > 0) await verify(client, acks, sent, node);
      // A random moment measured in acknowledgements, so a slow machine still kills mid-write.
      const killAfterAcks = acks.length + random.int(10, 120);
      const killDelayMs = random.int(0, 30);
      let stop = false;
      const writer = async (w: number) => {
        const writerRandom = seededRandom(seed + round * 100 + w);
        for (let n = 0; !stop; n++) {
          const topic = writerRandom.pick(TOPICS);
          const partition = writerRandom.int(0, PARTITIONS - 1);
          const producerKey = `${w}/${topic}/${partition}`;
          const idempotent = writerRandom.next() < 0.5;
          let producer = producers.get(producerKey);
          if (idempotent && producer === undefined) {
            producer = { ...producerIds[w], nextSequence: 0, pending: null };
            producers.set(producerKey, producer);
          }
          const batch =
            idempotent && producer!.pending !== null
              ? producer!.pending
              : makeBatch(
                  writerRandom,
                  `r${round}w${w}n${n}`,
                  partition,
                  idempotent ? producer! : null,
                );
          sent.add(digest(batch));
          if (idempotent) producer!.pending = batch;
          try {
            const ack = await client.append(topic, partition, batch);
            acks.push({
              topic,
              partition,
              baseOffset: ack.baseOffset,
              lastOffset: ack.lastOffset,
              sent: batch,
            });
            if (idempotent) producer!.pending = null;
          } catch {
            unacknowledged++;
            return;
          }
        }
      };
      const writers = Array.from({ length: WRITERS }, (_, w) => writer(w));
      for (let waitedMs = 0; acks.length < killAfterAcks && waitedMs < 20_000; waitedMs += 5) {
        await sleep(5);
      }
      await sleep(killDelayMs);
      await node.kill('SIGKILL');
      stop = true;
      await Promise.all(writers);
      client.close();
      console.info(
        `kill ${round + 1} at ack ${killAfterAcks} + ${killDelayMs} ms: ${acks.length} acks so far`,
      );
    }

    node = await spawnNode('log-node', args);
    const last = await connect();
    await verify(last, acks, sent, node);
    last.close();
    await node.stop();
    node = null;
    // Straight from the files: every byte of every segment is a whole, valid batch.
    for (const topic of TOPICS) {
      for (let p = 0; p < PARTITIONS; p++) {
        const segments = readSegmentFiles(partitionDirOf(dir.path, topic, p));
        let expected = 0;
        for (const batch of segments.flatMap((segment) => segment.batches)) {
          expect(batch.header.baseOffset, `${topic}:${p}`).toBe(expected);
          expected = lastOffsetOf(batch.header) + 1;
        }
      }
    }
    console.info(`${acks.length} acknowledged appends, ${unacknowledged} cut by kills`);
    expect(acks.length).toBeGreaterThan(KILLS * WRITERS);
  });
});

function makeBatch(
  random: ReturnType<typeof seededRandom>,
  tag: string,
  partition: number,
  producer: Producer | null,
): Buffer {
  const count = random.pick(RECORD_COUNTS);
  // Keys of the partition, as Kafka's partitioner places them (the listener refuses others).
  const keys = keysIn(partition, PARTITIONS, count, `${tag}-`);
  const records: LogRecord[] = keys.map((key, i) => ({
    key,
    value:
      random.next() < 0.1
        ? null
        : Buffer.from(JSON.stringify({ tag, i, pad: 'x'.repeat(random.int(0, 200)) })),
    timestampMs: Date.now(),
  }));
  if (producer === null) return encodeBatch(records);
  const baseSequence = producer.nextSequence;
  producer.nextSequence += records.length;
  return encodeBatch(records, {
    producerId: producer.producerId,
    producerEpoch: producer.producerEpoch,
    baseSequence,
  });
}

async function verify(
  client: LogClient,
  acks: readonly Ack[],
  sent: ReadonlySet<string>,
  node: SpawnedNode,
): Promise<void> {
  for (const topic of TOPICS) {
    for (let p = 0; p < PARTITIONS; p++) {
      await verifyPartition(client, topic, p, acks, sent, node);
    }
  }
}

async function verifyPartition(
  client: LogClient,
  topic: string,
  p: number,
  acks: readonly Ack[],
  sent: ReadonlySet<string>,
  node: SpawnedNode,
): Promise<void> {
  const { batches, logStartOffset, endOffset } = await readPartition(client, topic, p);
  expect(logStartOffset).toBe(0);
  const byBase = new Map<number, Buffer>();
  const seen = new Set<string>();
  let expected = 0;
  for (const { header, bytes } of batches) {
    expect(header.baseOffset, `${topic}:${p}: offsets dense`).toBe(expected);
    expected = lastOffsetOf(header) + 1;
    const key = digest(bytes);
    expect(sent.has(key), `${topic}:${p} offset ${header.baseOffset}: a batch that was sent`).toBe(
      true,
    );
    expect(seen.has(key), `${topic}:${p} offset ${header.baseOffset}: stored once`).toBe(false);
    seen.add(key);
    byBase.set(header.baseOffset, bytes);
  }
  expect(endOffset, `${topic}:${p}: end offset after the last batch`).toBe(expected);
  for (const ack of acks.filter((a) => a.topic === topic && a.partition === p)) {
    const stored = byBase.get(ack.baseOffset);
    expect(
      stored,
      `${topic}:${p}: acknowledged offset ${ack.baseOffset} present\n${node.output()}`,
    ).toBeDefined();
    expect(
      lastOffsetOf({
        baseOffset: ack.baseOffset,
        lastOffsetDelta: stored!.readInt32BE(23),
      } as never),
    ).toBe(ack.lastOffset);
    expect(
      producerBytes(stored!).equals(producerBytes(ack.sent)),
      `${topic}:${p} offset ${ack.baseOffset}: bytes as sent`,
    ).toBe(true);
  }
}
