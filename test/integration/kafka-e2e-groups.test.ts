/**
 * An @platformatic/kafka consumer group against `tailbase start` as a spawned process: two
 * members split a collection topic's partitions (each reads only its own), the survivor takes
 * them all when the other leaves and goes on after the other's commits, and after the process is
 * stopped (SIGTERM) and started again on the same data directory, the committed offsets are
 * there and a new member resumes right after them. The documents are written through the
 * gateway's bulk API, so each lands in its key's murmur2 partition. (kafkajs groups are covered
 * in process by kafka-groups.test.ts.)
 *
 * Records are written only once every member's stream has settled on its new assignment (see
 * `settled` in member()): a rebalance does not stop a MessagesStream's fetch in flight, so records
 * written during one can reach a member twice, or reach a member that no longer owns their
 * partition, which is at-least-once delivery and not what the counts here check.
 */
import { Consumer, stringDeserializers, type MessagesStream } from '@platformatic/kafka';
import { afterEach, describe, expect, it } from 'vitest';
import { partitionFor } from '../../shared/partitioner.js';
import { kafkaBrokerOf } from '../harness/kafka.js';
import { spawnNode, type SpawnedNode } from '../harness/spawn-node.js';
import { tempDir } from '../harness/temp-dir.js';

const PARTITIONS = 4;
const TOPIC = 'events';
const GROUP = 'e2e-group';
const WAIT_MS = 30_000;
const CLOSE_WAIT_MS = 10_000;

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) {
    await Promise.resolve()
      .then(cleanup)
      .catch(() => undefined);
  }
});

async function startTailbase(dataDir: string): Promise<SpawnedNode & { broker: string }> {
  const node = await spawnNode(
    'start',
    ['--data', dataDir, '--port', '0', '--partitions', String(PARTITIONS)],
    { urlPattern: /tailbase is ready: (https?:\/\/\S+)/, readyTimeoutMs: 30_000 },
  );
  return { ...node, broker: kafkaBrokerOf(node.output()) };
}

async function until(what: string, condition: () => boolean, waitMs = WAIT_MS): Promise<void> {
  // condition() may throw to fail at once.
  const deadline = Date.now() + waitMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function withinMs<T>(what: string, ms: number, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} took over ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** Writes `{key, n}` documents through the gateway's bulk API. */
async function bulk(url: string, keys: string[]): Promise<void> {
  const response = await fetch(`${url}/v1/collections/${TOPIC}/docs`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-ndjson' },
    body: keys.map((key, n) => JSON.stringify({ key, value: { key, n } })).join('\n') + '\n',
    signal: AbortSignal.timeout(15_000),
  });
  expect(response.status).toBe(200);
}

/**
 * Waits for the members' commits to reach `expected`; a member's error, or a count past it (a
 * record read twice), fails at once rather than as a timeout.
 */
async function untilCommitted(
  what: string,
  members: Member[],
  committed: () => number,
  expected: number,
): Promise<void> {
  await until(what, () => {
    for (const m of members) {
      if (m.error !== null) throw new Error(`${m.clientId} failed`, { cause: m.error });
    }
    const count = committed();
    if (count > expected) throw new Error(`${what}: ${count} committed, ${expected} expected`);
    return count === expected;
  });
}

type Member = Awaited<ReturnType<typeof member>>;

interface Read {
  key: string;
  partition: number;
  offset: number;
}

/**
 * A group member: reads TOPIC from the group's committed offsets (the earliest without one),
 * commits each record after reading it, and keeps its current assignment.
 *
 * `settled()` is true once its stream reads only what its current assignment gives it, from the
 * group's committed offsets. A MessagesStream does not cancel a fetch in flight when the group
 * rebalances: on consumer:group:join it refreshes its positions (ListOffsets, then OffsetFetch)
 * while that fetch, sent under the previous assignment, may still answer. Its records are
 * delivered even for partitions now another member's, and when they come before the refresh's
 * OffsetFetch answers, the refresh moves the position back to the older committed offset and they
 * are delivered again. So a member has settled after its stream's refresh ('offsets') and then one
 * fetch answered ('fetch'): any fetch it sends from then on has the new assignment and positions.
 */
async function member(broker: string, clientId: string) {
  const consumer = new Consumer({
    clientId,
    groupId: GROUP,
    bootstrapBrokers: [broker],
    deserializers: stringDeserializers,
    timeout: 5_000,
    retries: 5,
    retryDelay: 200,
    sessionTimeout: 10_000,
    rebalanceTimeout: 10_000,
    heartbeatInterval: 300,
  });
  let stream: MessagesStream<string, string, string, string> | undefined;
  // The member has just joined (consume() joins, then the stream refreshes its positions).
  let phase: 'joined' | 'refreshed' | 'settled' = 'joined';
  const state = {
    clientId,
    consumer,
    reads: [] as Read[],
    committed: 0,
    error: null as Error | null,
    partitions(): number[] {
      const assigned = consumer.assignments?.find((a) => a.topic === TOPIC)?.partitions ?? [];
      return [...assigned].sort();
    },
    settled(): boolean {
      return phase === 'settled';
    },
    async close(): Promise<void> {
      try {
        await withinMs(
          `closing ${clientId}`,
          CLOSE_WAIT_MS,
          (async () => {
            await stream?.close();
            await consumer.close();
          })(),
        );
      } catch (error) {
        await Promise.resolve(consumer.close(true)).catch(() => undefined);
        throw error;
      }
    },
  };
  cleanups.push(() => consumer.close(true));
  stream = await consumer.consume({
    topics: [TOPIC],
    mode: 'committed',
    fallbackMode: 'earliest',
    autocommit: false,
    maxWaitTime: 500,
    sessionTimeout: 10_000,
    rebalanceTimeout: 10_000,
    heartbeatInterval: 300,
  });
  consumer.on('consumer:group:join', () => (phase = 'joined'));
  stream.on('offsets', () => {
    if (phase === 'joined') phase = 'refreshed';
  });
  stream.on('fetch', () => {
    if (phase === 'refreshed') phase = 'settled';
  });
  void (async () => {
    for await (const message of stream) {
      state.reads.push({
        key: message.key,
        partition: message.partition,
        offset: Number(message.offset),
      });
      await message.commit();
      state.committed++;
    }
  })().catch((error: Error) => {
    state.error = error;
  });
  return state;
}

function keysOf(reads: Read[]): string[] {
  return reads.map(({ key }) => key).sort();
}

describe('an @platformatic/kafka consumer group against tailbase start', () => {
  it('two members split the partitions, rebalance on a leave, and resume from committed offsets after a restart', async () => {
    const dir = tempDir('kafka-e2e-groups');
    cleanups.push(() => dir.cleanup());
    let node = await startTailbase(dir.path);
    cleanups.push(() => node.stop());
    // The topic exists before the members join, so the first assignment covers every partition.
    await bulk(node.url, ['warm-up']);

    const a = await member(node.broker, 'member-a');
    const b = await member(node.broker, 'member-b');
    await until(
      'the two members to split the partitions',
      () =>
        a.partitions().length === PARTITIONS / 2 &&
        b.partitions().length === PARTITIONS / 2 &&
        [...a.partitions(), ...b.partitions()].sort().join() === '0,1,2,3' &&
        a.settled() &&
        b.settled(),
    );
    await untilCommitted(
      'the warm-up record to be read',
      [a, b],
      () => a.committed + b.committed,
      1,
    );

    const first = Array.from({ length: 40 }, (_, i) => `first-${i}`);
    await bulk(node.url, first);
    await untilCommitted(
      'the members to read and commit the first records',
      [a, b],
      () => a.committed + b.committed,
      first.length + 1,
    );
    // Each member read only its own partitions, and the two read every record once.
    for (const m of [a, b]) {
      expect(m.error).toBeNull();
      for (const read of m.reads) {
        expect(m.partitions()).toContain(read.partition);
        expect(read.partition).toBe(partitionFor(read.key, PARTITIONS));
      }
    }
    expect(keysOf([...a.reads, ...b.reads])).toEqual(['warm-up', ...first].sort());

    const aBefore = a.reads.length;
    await b.close();
    await until(
      'the survivor to take every partition',
      () => a.partitions().length === PARTITIONS && a.settled(),
    );
    const second = Array.from({ length: 20 }, (_, i) => `second-${i}`);
    await bulk(node.url, second);
    await untilCommitted(
      'the survivor to read and commit the second records',
      [a],
      () => a.committed - aBefore,
      second.length,
    );
    // After b's commits: nothing b read comes again.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(a.error).toBeNull();
    expect(keysOf(a.reads.slice(aBefore))).toEqual(second.sort());
    await a.close();

    // Records no member has read, then a clean stop and a start on the same directory.
    const third = Array.from({ length: 12 }, (_, i) => `third-${i}`);
    await bulk(node.url, third);
    const endsBefore = await endOffsets(node.broker);
    expect(await node.stop()).toEqual({ code: 0, signal: null });
    node = await startTailbase(dir.path);

    const c = await member(node.broker, 'member-c');
    const committed = await c.consumer.listCommittedOffsets({
      topics: [{ topic: TOPIC, partitions: [0, 1, 2, 3] }],
    });
    // What was committed before the stop: every record but the third ones.
    const thirdPerPartition = [0, 1, 2, 3].map(
      (p) => third.filter((key) => partitionFor(key, PARTITIONS) === p).length,
    );
    expect(committed.get(TOPIC)!.map(Number)).toEqual(
      endsBefore.map((end, p) => end - thirdPerPartition[p]),
    );
    await untilCommitted(
      'the new member to read the third records',
      [c],
      () => c.committed,
      third.length,
    );
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(c.error).toBeNull();
    expect(keysOf(c.reads)).toEqual(third.sort());
    await c.close();
  });
});

/** Each partition's end offset, by a consumer outside the group. */
async function endOffsets(broker: string): Promise<number[]> {
  const consumer = new Consumer({
    clientId: 'offsets',
    groupId: 'offsets-only',
    bootstrapBrokers: [broker],
    timeout: 5_000,
  });
  try {
    const offsets = await consumer.listOffsets({ topics: [TOPIC] });
    return offsets.get(TOPIC)!.map(Number);
  } finally {
    await consumer.close(true);
  }
}
