// Proves the compaction swap is crash-safe: a real log-node holding two collection topics, killed
// -9 at random moments of a cleaner pass (some right as a compacted copy appears) restarts with every key's latest record
// intact, every record left at its original offset unchanged, and no `.cleaned` file left over.
// Records are written and read back over its Kafka listener.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { encodeBatch, type LogRecord } from '../../shared/batch-codec.js';
import { CLEANER_CHECKPOINT_FILE } from '../../log-node/cleaner-checkpoint.js';
import type { CleanSummary } from '../../log-node/log-cleaner.js';
import type { PartitionStatus } from '../../log-node/log-node.js';
import { CLEANED_SUFFIX, segmentPath } from '../../log-node/segment-files.js';
import { KafkaLogClient } from '../../shared/kafka-log/index.js';
import type { LogClient } from '../../shared/log-api.js';
import { freePort } from '../harness/free-port.js';
import { keysIn } from '../harness/keys.js';
import {
  partitionDirOf,
  type Random,
  readPartition,
  recordsOf,
  seededRandom,
  sleep,
  spawnNode,
  type SpawnedNode,
  tempDir,
  type TempDir,
  testSeed,
  appendPlanned,
} from '../harness/index.js';

const PARTITIONS = 2;
/** Collection topics written together, with the same keys. */
const TOPICS = ['users', 'orders'];
/**
 * Batches written (over every topic) before each kill: the first round builds the log, later ones
 * re-dirty it.
 */
const BATCHES_PER_ROUND = [320, 120, 120];
const IN_FLIGHT = 8;

/** Per topic, per partition, the record at each offset. */
type History = Map<string, Map<number, LogRecord>[]>;
const hex = (value: Uint8Array | null) =>
  value === null ? null : Buffer.from(value).toString('hex');

let dir: TempDir | null = null;
let node: SpawnedNode | null = null;
afterEach(async () => {
  await node?.kill();
  dir?.cleanup();
  node = null;
  dir = null;
});

/** Each partition's 8 keys, as Kafka's partitioner places them (the listener refuses others). */
const KEYS = Array.from({ length: PARTITIONS }, (_, p) => keysIn(p, PARTITIONS, 8, 'k'));

async function write(
  client: LogClient,
  random: Random,
  history: History,
  round: number,
): Promise<void> {
  const planned = Array.from({ length: BATCHES_PER_ROUND[round] }, (_, n) => {
    const partition = random.int(0, PARTITIONS - 1);
    return {
      topic: random.pick(TOPICS),
      partition,
      records: Array.from({ length: random.int(1, 5) }, (_, i) => ({
        key: random.pick(KEYS[partition]),
        value:
          random.next() < 0.2
            ? null
            : Buffer.from(JSON.stringify({ round, n, i, pad: '-'.repeat(random.int(0, 80)) })),
        timestampMs: Date.now(),
      })),
    };
  });
  await Promise.all(
    TOPICS.map((topic) =>
      appendPlanned(
        client,
        topic,
        planned.filter((batch) => batch.topic === topic),
        IN_FLIGHT,
        history.get(topic)!,
      ),
    ),
  );
}

function leftovers(dataDir: string): string[] {
  return TOPICS.flatMap((topic) =>
    Array.from({ length: PARTITIONS }, (_, p) =>
      fs
        .readdirSync(partitionDirOf(dataDir, topic, p))
        .filter((n) => n.endsWith('.cleaned'))
        .map((n) => path.join(topic, String(p), n)),
    ).flat(),
  );
}

async function verify(client: LogClient, history: History, context: string): Promise<number> {
  let left = 0;
  for (const [topic, partitions] of history) {
    left += await verifyTopic(client, topic, partitions, context);
  }
  return left;
}

async function verifyTopic(
  client: LogClient,
  topic: string,
  history: Map<number, LogRecord>[],
  context: string,
): Promise<number> {
  let left = 0;
  for (let p = 0; p < PARTITIONS; p++) {
    const at = `${context}: topic ${topic} partition ${p}`;
    const full = [...history[p].entries()].sort(([a], [b]) => a - b);
    const { batches, endOffset } = await readPartition(client, topic, p);
    expect(endOffset, `${at} end offset`).toBe(full.length);
    const records = recordsOf(batches);
    left += records.length;
    const present = new Set<number>();
    let previous = -1;
    for (const r of records) {
      expect(r.offset, `${context}: offsets increase`).toBeGreaterThan(previous);
      previous = r.offset;
      const original = history[p].get(r.offset)!;
      expect([r.key, hex(r.value)], `${at} offset ${r.offset}`).toEqual([
        original.key,
        hex(original.value),
      ]);
      present.add(r.offset);
    }
    const latest = new Map<string, number>();
    for (const [offset, r] of full) latest.set(r.key, offset);
    for (const [key, offset] of latest) {
      expect(present.has(offset), `${at} latest ${key} at ${offset}`).toBe(true);
    }
  }
  return left;
}

describe('log-node compaction under kill -9', () => {
  it('loses nothing when killed in the middle of a cleaner pass', async () => {
    const seed = testSeed('log-node compaction crash');
    const random = seededRandom(seed);
    dir = tempDir('compaction-crash');
    const kafkaPort = await freePort();
    const args = [
      ...['--data', dir.path, '--port', '0', '--partitions', String(PARTITIONS)],
      ...['--segment-bytes-max', '4096', '--batch-bytes-max', '4096'],
      ...['--cleaner-interval-ms', '3600000'],
      // A kill -9 keeps what was written in the page cache, so acknowledging before the fsync
      // loses nothing here and makes the setup fast; the compaction swap fsyncs regardless.
      ...['--fsync', 'interval'],
      ...['--kafka-port', String(kafkaPort)],
    ];
    const connect = () => KafkaLogClient.connect({ bootstrap: [`127.0.0.1:${kafkaPort}`] });
    const history: History = new Map(
      TOPICS.map((topic) => [topic, Array.from({ length: PARTITIONS }, () => new Map())]),
    );
    node = await spawnNode('log-node', args);
    let client = await connect();
    for (let kill = 0; kill < BATCHES_PER_ROUND.length; kill++) {
      let started = Date.now();
      await write(client, random, history, kill);
      const writeMs = Date.now() - started;
      started = Date.now();
      const cleaning = fetch(`${node.url}/internal/admin/clean`, { method: 'POST' }).catch(
        () => null,
      );
      const atCopy = random.next() < 0.5;
      if (atCopy) {
        // Kill the moment a compacted copy is on disk: inside the write, fsync, rename window.
        for (let polls = 0; polls < 5000 && leftovers(dir.path).length === 0; polls++)
          await sleep(1);
      } else {
        await sleep(random.int(0, 120));
      }
      const seen = leftovers(dir.path).length;
      await node.kill('SIGKILL');
      client.close();
      const answered = (await cleaning) !== null;
      console.info(
        `kill ${kill + 1} (${atCopy ? 'at a .cleaned file' : 'at a random delay'}): ` +
          `${seen} .cleaned file(s) on disk; the pass ${answered ? 'had finished' : 'was cut'}`,
      );
      const killMs = Date.now() - started;
      started = Date.now();
      node = await spawnNode('log-node', args);
      client = await connect();
      console.info(
        `write ${writeMs} ms, clean until kill ${killMs} ms, restart ${Date.now() - started} ms`,
      );
      expect(leftovers(dir.path), 'recovery removes unfinished copies').toEqual([]);
      await verify(client, history, `after kill ${kill + 1}`);
    }
    const before = await verify(client, history, 'before the last pass');
    const response = await fetch(`${node.url}/internal/admin/clean`, { method: 'POST' });
    expect(response.status).toBe(200);
    const after = await verify(client, history, 'after the last pass');
    expect(after).toBeLessThanOrEqual(before);
    client.close();
    await node.stop();
    node = null;
  });
});

// Proves the cleaned-through point never gets ahead of the swaps it covers, and that one left
// behind by a kill -9 only costs work: a real log-node, one partition, tombstones due at once.
// A directory in the way of a file stops the pass at that file (open answers EISDIR), so the kill
// lands exactly between two steps: before any swap (the copy cannot be written), and after every
// swap but before the point's write.
describe('log-node compaction point under kill -9', () => {
  const TOPIC = 'docs';
  const record = (key: string, value: string | null): LogRecord => ({
    key,
    // The listener takes documents: JSON objects.
    value: value === null ? null : Buffer.from(JSON.stringify({ value })),
    timestampMs: Date.now(),
  });

  it('stays where the last durable pass left it, and the log loses nothing', async () => {
    dir = tempDir('compaction-point-kill');
    const kafkaPort = await freePort();
    const args = [
      ...['--data', dir.path, '--port', '0', '--partitions', '1', '--fsync', 'interval'],
      ...['--segment-bytes-max', '1000', '--batch-bytes-max', '1000'],
      ...['--cleaner-interval-ms', '3600000', '--cleaner-min-dirty-ratio', '0.01'],
      ...['--delete-retention-ms', '0', '--kafka-port', String(kafkaPort)],
    ];
    const connect = () => KafkaLogClient.connect({ bootstrap: [`127.0.0.1:${kafkaPort}`] });
    const partitionDir = partitionDirOf(dir.path, TOPIC, 0);
    const written = new Map<number, LogRecord>();
    node = await spawnNode('log-node', args);
    let client = await connect();
    const append = async (records: LogRecord[]) => {
      const ack = await client.append(TOPIC, 0, encodeBatch(records));
      records.forEach((r, i) => written.set(ack.baseOffset + i, r));
    };
    const clean = async () => {
      const response = await fetch(`${node!.url}/internal/admin/clean`, { method: 'POST' });
      const { partitions } = (await response.json()) as { partitions: CleanSummary[] };
      return partitions.find((s) => s.topic === TOPIC)!;
    };
    const point = async () => {
      const response = await fetch(`${node!.url}/internal/status`);
      const { partitions } = (await response.json()) as { partitions: PartitionStatus[] };
      return partitions.find((s) => s.topic === TOPIC)!.cleanedThroughOffset;
    };
    /** kill -9 with the directory in the way, then a restart with it gone. */
    const killAndRestart = async (inTheWay: string) => {
      await node!.kill('SIGKILL');
      client.close();
      fs.rmdirSync(inTheWay);
      node = await spawnNode('log-node', args);
      client = await connect();
    };
    /** Every record left is the one written at its offset, and every key's newest value is left. */
    const verifyLog = async (context: string) => {
      const left = recordsOf((await readPartition(client, TOPIC, 0)).batches);
      for (const r of left) {
        const original = written.get(r.offset)!;
        expect([r.key, hex(r.value)], `${context}: offset ${r.offset}`).toEqual([
          original.key,
          hex(original.value),
        ]);
      }
      const newest = new Map<string, number>();
      for (const [offset, r] of [...written].sort(([a], [b]) => a - b)) newest.set(r.key, offset);
      const present = new Set(left.map((r) => r.offset));
      for (const [key, offset] of newest) {
        // A tombstone may go (due at once here); the key must then have no record left at all.
        const kept = written.get(offset)!.value === null ? !left.some((r) => r.key === key) : false;
        expect(present.has(offset) || kept, `${context}: ${key}'s newest, at ${offset}`).toBe(true);
      }
    };
    try {
      // Segment 0: K's value; cleaned by a first pass (nothing superseded), the point at its end.
      await append([record('K', 'v1'), record('a', 'a')]);
      await append([record('pad', 'p'.repeat(800))]);
      await append([record('pad2', 'p'.repeat(600))]);
      await clean();
      expect(await point()).toBe(3);
      // The dirty part: K's tombstone (due at once), in a segment closed by the next roll.
      await append([record('K', null)]);
      await append([record('pad3', 'p'.repeat(800))]);

      // The copy of segment 0 cannot be written: nothing is swapped, and the point stays.
      const copyInTheWay = segmentPath(partitionDir, 0, CLEANED_SUFFIX);
      fs.mkdirSync(copyInTheWay);
      const stopped = await clean();
      expect(stopped.error, 'the pass stopped at the copy').toMatch(/EISDIR/);
      expect(stopped.segmentsCompacted).toBe(0);
      expect(await point(), 'no swap, no move').toBe(3);
      await killAndRestart(copyInTheWay);
      expect(await point(), 'after kill -9, before any swap').toBe(3);
      await verifyLog('after a kill before the swaps');

      // Every swap is done and durable, the point's write is not: the old point is what is left.
      const pointInTheWay = path.join(partitionDir, `${CLEANER_CHECKPOINT_FILE}.tmp`);
      fs.mkdirSync(pointInTheWay);
      const swapped = await clean();
      expect(swapped.error, 'the pass stopped at the point').toMatch(/EISDIR/);
      expect(swapped.segmentsCompacted).toBeGreaterThan(0);
      await killAndRestart(pointInTheWay);
      expect(await point(), 'after kill -9 between the swaps and the point').toBe(3);
      await verifyLog('after a kill between the swaps and the point');
      const left = recordsOf((await readPartition(client, TOPIC, 0)).batches);
      expect(
        left.filter((r) => r.key === 'K').map((r) => r.value),
        "the swaps dropped K's value; its tombstone, dirty when the pass began, stays",
      ).toEqual([null]);

      // The next pass does that part again, and moves the point.
      const again = await clean();
      expect(again.error).toBeUndefined();
      expect(await point()).toBe(5);
      await verifyLog('after the pass that redid the work');
    } finally {
      client.close();
    }
  });
});
