// Proves consumer groups with real clients nobody here wrote, against a real log-node opened
// in-process with the Kafka listener and the group coordinator: two kafkajs members split a
// collection topic's partitions, the survivor takes them all when the other leaves, committed
// offsets survive closing and reopening the log-node (a new member resumes after them), and kcat
// (librdkafka) -G consumes as a group and resumes from its own commits.
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { Kafka, logLevel, type Consumer, type Producer } from 'kafkajs';
import { openLogNode, type OpenLogNode } from '../../log-node/index.js';
import { GroupCoordinator } from '../../log-node/kafka/group-coordinator.js';
import { OffsetStore } from '../../log-node/kafka/group-offset-store.js';
import { startKafkaListener, type KafkaListener } from '../../log-node/kafka/index.js';
import { LocalLogClient } from '../../log-node/local-log-client.js';
import type { LogNode } from '../../log-node/log-node.js';
import type { PartitionLog } from '../../log-node/partition-log.js';
import { defaultTopicConfigs } from '../../log-node/topic-configs.js';
import { ApiKey, ErrorCode } from '../../shared/kafka/index.js';
import { createLogger } from '../../shared/logger.js';
import { CONSUMER_OFFSETS_TOPIC } from '../../shared/topics.js';
import { tempDir, type TempDir } from '../harness/temp-dir.js';
import { kcat, KCAT_INSTALLED, RawKafkaConnection } from '../harness/kafka.js';

const PARTITIONS = 4;
const TOPIC = 'events';
const WAIT_MS = 30_000;
const logger = createLogger('kafka-groups', process.env.TAILBASE_LOG_LEVEL ?? 'silent');

interface GroupNode {
  node: OpenLogNode;
  listener: KafkaListener;
  coordinator: GroupCoordinator;
  broker: string;
  stop(): Promise<void>;
}

/** A log-node on `dir` with the listener and the coordinator, as the log-node will wire them. */
async function startGroupNode(dir: TempDir): Promise<GroupNode> {
  const node = await openLogNode({ dataDir: dir.path, partitions: PARTITIONS, logger });
  const coordinator = new GroupCoordinator({
    log: node.client,
    // Short enough for a test, and the members still start together in one generation.
    limits: { initialRebalanceDelayMs: 500 },
    logger,
  });
  await coordinator.load();
  const listener = await startKafkaListener({
    log: node.client,
    logCreatingNothing: node.viewClient,
    port: 0,
    logger,
    topicConfigDefaults: (topic) => defaultTopicConfigs(node.node.config, topic),
    handlers: coordinator.handlers(),
  });
  return {
    node,
    listener,
    coordinator,
    broker: `127.0.0.1:${listener.port}`,
    stop: async () => {
      await listener.close();
      coordinator.close();
      await node.stop();
    },
  };
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function kafkaOf(broker: string, clientId: string): Kafka {
  return new Kafka({
    clientId,
    brokers: [broker],
    logLevel: logLevel.NOTHING,
    retry: { retries: 10, initialRetryTime: 100, maxRetryTime: 1_000 },
  });
}

async function until(what: string, condition: () => boolean, waitMs = WAIT_MS): Promise<void> {
  const deadline = Date.now() + waitMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function produce(producer: Producer, keys: string[]): Promise<void> {
  await producer.send({
    topic: TOPIC,
    acks: -1,
    messages: keys.map((key) => ({ key, value: JSON.stringify({ key }) })),
  });
}

/** A kafkajs member that records what it consumed and the partitions of its latest assignment. */
async function member(kafka: Kafka, groupId: string) {
  const consumer: Consumer = kafka.consumer({
    groupId,
    sessionTimeout: 10_000,
    rebalanceTimeout: 10_000,
    heartbeatInterval: 300,
  });
  const state = { consumer, keys: [] as string[], partitions: [] as number[], generations: 0 };
  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
    state.partitions = [...(payload.memberAssignment[TOPIC] ?? [])].sort();
    state.generations += 1;
  });
  await consumer.connect();
  await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
  await consumer.run({
    autoCommitInterval: 100,
    eachMessage: async ({ message }) => {
      state.keys.push(message.key!.toString());
    },
  });
  cleanups.push(() => consumer.disconnect());
  return state;
}

describe('consumer groups over the Kafka listener', () => {
  it('kafkajs: two members split the partitions, rebalance on a leave, and resume from committed offsets after a restart', async () => {
    const dir = tempDir('kafka-groups');
    cleanups.push(() => dir.cleanup());
    let kafkaNode = await startGroupNode(dir);
    let stopped = false;
    cleanups.push(() => (stopped ? undefined : kafkaNode.stop()));
    await kafkaNode.node.client.ensureTopic(TOPIC);

    const kafka = kafkaOf(kafkaNode.broker, 'groups-test');
    const producer = kafka.producer();
    await producer.connect();
    const firstKeys = Array.from({ length: 40 }, (_, i) => `first-${i}`);
    await produce(producer, firstKeys);

    const a = await member(kafka, 'g1');
    const b = await member(kafka, 'g1');
    // Until both have joined the same generation, one may still hold an older assignment.
    await until(
      'the two members to split the partitions and read everything',
      () =>
        a.partitions.length > 0 &&
        b.partitions.length > 0 &&
        [...a.partitions, ...b.partitions].sort().join() === '0,1,2,3' &&
        new Set([...a.keys, ...b.keys]).size === firstKeys.length,
    );
    expect(a.partitions.length).toBe(PARTITIONS / 2);

    await b.consumer.disconnect();
    await until('the survivor to take every partition', () => a.partitions.length === PARTITIONS);
    const secondKeys = Array.from({ length: 8 }, (_, i) => `second-${i}`);
    await produce(producer, secondKeys);
    await until('the survivor to read the new records', () =>
      secondKeys.every((key) => a.keys.includes(key)),
    );
    await a.consumer.disconnect();
    await producer.disconnect();

    const admin = kafka.admin();
    await admin.connect();
    const committed = await admin.fetchOffsets({ groupId: 'g1', topics: [TOPIC] });
    await admin.disconnect();
    const total = committed[0].partitions.reduce((sum, p) => sum + Number(p.offset), 0);
    expect(total).toBe(firstKeys.length + secondKeys.length);

    stopped = true;
    await kafkaNode.stop();
    kafkaNode = await startGroupNode(dir);
    stopped = false;

    const reopened = kafkaOf(kafkaNode.broker, 'groups-test-after');
    const adminAfter = reopened.admin();
    await adminAfter.connect();
    const after = await adminAfter.fetchOffsets({ groupId: 'g1', topics: [TOPIC] });
    await adminAfter.disconnect();
    expect(after).toEqual(committed);

    const producerAfter = reopened.producer();
    await producerAfter.connect();
    const thirdKeys = Array.from({ length: 4 }, (_, i) => `third-${i}`);
    await produce(producerAfter, thirdKeys);
    await producerAfter.disconnect();
    const c = await member(reopened, 'g1');
    await until('the new member to read the records after the commits', () =>
      thirdKeys.every((key) => c.keys.includes(key)),
    );
    // Nothing committed before the restart is read again.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(c.keys.sort()).toEqual(thirdKeys.sort());
  });

  it.skipIf(!KCAT_INSTALLED)(
    'kcat -G consumes as a group and resumes from its commits',
    async () => {
      const dir = tempDir('kafka-groups-kcat');
      cleanups.push(() => dir.cleanup());
      const kafkaNode = await startGroupNode(dir);
      cleanups.push(() => kafkaNode.stop());
      await kafkaNode.node.client.ensureTopic(TOPIC);
      const producer = kafkaOf(kafkaNode.broker, 'kcat-test').producer();
      await producer.connect();
      cleanups.push(() => producer.disconnect());

      const consume = async (count: number) =>
        (
          await kcat(
            [
              '-b',
              kafkaNode.broker,
              '-G',
              'kcat-group',
              TOPIC,
              '-c',
              String(count),
              '-f',
              '%k\n',
              '-X',
              'auto.offset.reset=earliest',
              '-X',
              'session.timeout.ms=6000',
              '-q',
            ],
            { timeoutMs: WAIT_MS },
          )
        )
          .split('\n')
          .filter((line) => line !== '')
          .sort();

      const firstKeys = Array.from({ length: 10 }, (_, i) => `k-${i}`);
      await produce(producer, firstKeys);
      expect(await consume(firstKeys.length)).toEqual(firstKeys.sort());

      const moreKeys = Array.from({ length: 5 }, (_, i) => `more-${i}`);
      await produce(producer, moreKeys);
      expect(await consume(moreKeys.length)).toEqual(moreKeys.sort());
    },
  );
});

/**
 * The log-node's own LocalLogClient (whose append rejects as soon as its signal aborts, the append
 * carrying on), over a node whose __consumer_offsets appends answer holdMs after they are durable:
 * `started` is called as each one starts, `answered` holds their answers.
 */
function clientWithHeldOffsetAppends(node: LogNode, holdMs: number, started: () => void) {
  const answered: Promise<unknown>[] = [];
  const held = new Proxy(node, {
    get(target, key) {
      if (key === 'appendTarget') {
        return (topic: string, param: string, batch: Uint8Array) => {
          const partition = target.appendTarget(topic, param, batch);
          if (topic !== CONSUMER_OFFSETS_TOPIC) return partition;
          return {
            append: (bytes: Buffer) => {
              const answer = partition.append(bytes).then(async (result) => {
                await sleep(holdMs);
                return result;
              });
              answered.push(answer);
              started();
              return answer;
            },
          } as unknown as PartitionLog;
        };
      }
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { client: new LocalLogClient(held), answered };
}

describe('an OffsetCommit whose connection resets while its append is in flight', () => {
  it('is applied once the log holds it: OffsetFetch answers the new offset, as a restart does', async () => {
    const dir = tempDir('kafka-groups-reset');
    cleanups.push(() => dir.cleanup());
    const node = await openLogNode({ dataDir: dir.path, partitions: PARTITIONS, logger });
    cleanups.push(() => node.stop());
    await node.client.ensureTopic(TOPIC);

    let started = () => undefined as void;
    const { client, answered } = clientWithHeldOffsetAppends(node.node, 300, () => started());
    const coordinator = new GroupCoordinator({ log: client, logger });
    await coordinator.load();
    const listener = await startKafkaListener({
      log: client,
      logCreatingNothing: node.viewClient,
      port: 0,
      logger,
      topicConfigDefaults: (topic) => defaultTopicConfigs(node.node.config, topic),
      handlers: coordinator.handlers(),
    });
    cleanups.push(async () => {
      await listener.close();
      coordinator.close();
    });

    const groupId = 'resets';
    const commit = (offset: bigint) => ({
      groupId,
      generationIdOrMemberEpoch: -1,
      memberId: '',
      topics: [
        {
          name: TOPIC,
          partitions: [{ partitionIndex: 0, committedOffset: offset, committedMetadata: null }],
        },
      ],
    });
    const fetched = async (connection: RawKafkaConnection) => {
      const answer = await connection.request(ApiKey.OffsetFetch, 7, {
        groupId,
        topics: [{ name: TOPIC, partitionIndexes: [0] }],
      });
      return answer.topics[0].partitions[0].committedOffset;
    };

    const steady = await RawKafkaConnection.open(listener.port);
    cleanups.push(() => steady.destroy());
    const first = await steady.request(ApiKey.OffsetCommit, 8, commit(10n));
    expect(first.topics[0].partitions[0].errorCode).toBe(ErrorCode.NONE);
    expect(await fetched(steady)).toBe(10n);

    // The second commit's connection is gone as soon as its append has started.
    const resetting = await RawKafkaConnection.open(listener.port);
    started = () => resetting.destroy();
    resetting.sendRequest(ApiKey.OffsetCommit, 8, commit(42n));
    await until('the second append', () => answered.length === 2, 5_000);
    await resetting.closed;
    await answered[1];
    // The handler's continuation after its append has run by the time another request is answered.
    await sleep(50);

    const durable = await new OffsetStore(node.client, 1 << 20).committedByTopic(groupId);
    expect(durable.get(TOPIC)?.get(0)?.offset).toBe(42);
    expect(await fetched(steady)).toBe(42n);
  });
});
