/**
 * Idempotent producers through retries, end to end: `tailbase start` as a spawned process, a
 * Kafka-aware proxy in front of its Kafka listener (test/harness/kafka-proxy.ts) that sends some
 * Produce requests to the listener twice byte for byte, drops the answer of some (the client
 * times out and retries) and cuts the connection after others reached the listener (the client
 * reconnects and retries). An idempotent kafkajs producer (acks=-1, maxInFlightRequests 1) and an
 * idempotent @platformatic/kafka producer send keyed documents through it; afterwards the log
 * holds each exactly once (a kafkajs group consumer reads every partition from the beginning, and
 * the end offsets add up to the records sent), the copy of each duplicated request was answered
 * with the original's offsets, and the gateway's strong GET answers each document at the offset
 * the consumer read it at.
 *
 * tailbase has no advertised-host/port flag: Metadata names the host the client reached and the
 * listener's own port. So the proxy rewrites Metadata (and FindCoordinator) answers to name
 * itself, and every connection a producer opens goes through it.
 */
import {
  Producer as PlatformaticProducer,
  ProduceAcks,
  stringSerializers,
} from '@platformatic/kafka';
import { Kafka, logLevel, Partitioners } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partitionFor } from '../../shared/partitioner.js';
import { spawnEmbedded, type SpawnedEmbedded } from '../harness/embedded.js';
import { kafkaBrokerOf } from '../harness/kafka.js';
import { startKafkaProxy, type KafkaProxy, type ProduceFault } from '../harness/kafka-proxy.js';

const PARTITIONS = 4;
const SENDS = 20;
const RECORDS_PER_SEND = 3;
const REQUEST_TIMEOUT_MS = 1_500;
const CONSUME_WAIT_MS = 30_000;

/**
 * Every fault in turn, on the first FAULTY_REQUESTS Produce requests of a test; then none.
 * @platformatic/kafka 1.35 does not retry a request that timed out (its TimeoutError has
 * canRetry: false, so the send fails), so a dropped answer is no retry for it: its schedule
 * duplicates and cuts only.
 */
const FAULTY_REQUESTS = 60;
const EVERY_FAULT: ProduceFault[] = ['duplicate', 'forward', 'cut', 'drop-answer', 'forward'];
const RETRIED_FAULTS: ProduceFault[] = ['duplicate', 'forward', 'cut', 'forward'];
let faults: ProduceFault[] = [];
let firstRequest = 1;
function useSchedule(schedule: ProduceFault[], proxy: KafkaProxy): void {
  faults = schedule;
  firstRequest = proxy.stats.produceRequests + 1;
}
const schedule = (n: number): ProduceFault =>
  n - firstRequest < FAULTY_REQUESTS && faults.length > 0
    ? faults[(n - firstRequest) % faults.length]
    : 'forward';

interface Consumed {
  partition: number;
  offset: number;
  value: string;
}

function documentsOf(prefix: string): { key: string; value: string }[][] {
  return Array.from({ length: SENDS }, (_, send) =>
    Array.from({ length: RECORDS_PER_SEND }, (_, i) => {
      const n = send * RECORDS_PER_SEND + i;
      return { key: `${prefix}-${n}`, value: JSON.stringify({ n, text: `${prefix} record ${n}` }) };
    }),
  );
}

/** Every record of `topic`, read from the beginning by a kafkajs group consumer, by key. */
async function consumeAll(broker: string, topic: string): Promise<Map<string, Consumed[]>> {
  const kafka = new Kafka({
    clientId: `check-${topic}`,
    brokers: [broker],
    logLevel: logLevel.NOTHING,
    retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 1_000 },
  });
  const admin = kafka.admin();
  await admin.connect();
  let end: number;
  try {
    const offsets = await admin.fetchTopicOffsets(topic);
    end = offsets.reduce((sum, { high }) => sum + Number(high), 0);
  } finally {
    await admin.disconnect();
  }
  const byKey = new Map<string, Consumed[]>();
  let count = 0;
  const consumer = kafka.consumer({ groupId: `check-${topic}-${Date.now()}` });
  try {
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    let done!: () => void;
    const all = new Promise<void>((resolve) => (done = resolve));
    await consumer.run({
      eachMessage: async ({ partition, message }) => {
        const key = message.key!.toString('utf8');
        const seen = byKey.get(key) ?? [];
        seen.push({ partition, offset: Number(message.offset), value: message.value!.toString() });
        byKey.set(key, seen);
        if (++count >= end) done();
      },
    });
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      all,
      new Promise<void>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`consumed ${count} of ${end} records of ${topic}`)),
          CONSUME_WAIT_MS,
        );
      }),
    ]).finally(() => clearTimeout(timer));
  } finally {
    await consumer.disconnect();
  }
  return byKey;
}

describe('idempotent producers through a proxy that duplicates, drops and cuts Produce requests', () => {
  let node: SpawnedEmbedded;
  let broker: string;
  let proxy: KafkaProxy;
  beforeAll(async () => {
    node = await spawnEmbedded({ partitions: PARTITIONS });
    broker = kafkaBrokerOf(node.output());
    const [host, port] = broker.split(':');
    proxy = await startKafkaProxy({
      target: () => ({ host, port: Number(port) }),
      onProduce: schedule,
    });
  });
  afterAll(async () => {
    await proxy?.close();
    await node?.stop();
  });

  async function expectExactlyOnce(
    topic: string,
    sends: { key: string; value: string }[][],
  ): Promise<void> {
    const documents = sends.flat();
    const consumed = await consumeAll(broker, topic);
    expect(consumed.size).toBe(documents.length);
    for (const { key, value } of documents) {
      const copies = consumed.get(key) ?? [];
      expect(copies, `${key} in the log`).toHaveLength(1);
      expect(copies[0].value).toBe(value);
      expect(copies[0].partition).toBe(partitionFor(key, PARTITIONS));
      const response = await fetch(
        `${node.url}/v1/collections/${topic}/docs/${key}?consistency=strong`,
        { signal: AbortSignal.timeout(15_000) },
      );
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({
        key,
        value: JSON.parse(value),
        offset: copies[0].offset,
      });
    }
  }

  function expectFaultsAnsweredLikeTheOriginal(from: number): void {
    const duplicates = proxy.stats.duplicateAnswers.slice(from);
    expect(duplicates.length).toBeGreaterThan(0);
    for (const { original, duplicate } of duplicates) {
      expect(original.every((partition) => partition.includes(' error=0 '))).toBe(true);
      expect(duplicate).toEqual(original);
    }
  }

  it('kafkajs (idempotent, acks=-1, maxInFlightRequests 1) writes each record once', async () => {
    const before = { ...proxy.stats.faults };
    const duplicatesBefore = proxy.stats.duplicateAnswers.length;
    useSchedule(EVERY_FAULT, proxy);
    const kafka = new Kafka({
      clientId: 'kafkajs-idempotence',
      brokers: [proxy.broker],
      logLevel: logLevel.NOTHING,
      connectionTimeout: 3_000,
      requestTimeout: REQUEST_TIMEOUT_MS,
      retry: { retries: 10, initialRetryTime: 100, maxRetryTime: 1_000 },
    });
    const producer = kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      createPartitioner: Partitioners.DefaultPartitioner,
    });
    const sends = documentsOf('kjs');
    await producer.connect();
    try {
      for (const messages of sends) await producer.send({ topic: 'kjs', acks: -1, messages });
    } finally {
      await producer.disconnect();
    }
    const { faults: injected } = proxy.stats;
    expect(injected.duplicate - before.duplicate).toBeGreaterThan(0);
    expect(injected.cut - before.cut).toBeGreaterThan(0);
    expect(injected['drop-answer'] - before['drop-answer']).toBeGreaterThan(0);
    expectFaultsAnsweredLikeTheOriginal(duplicatesBefore);
    await expectExactlyOnce('kjs', sends);
  });

  it('@platformatic/kafka (idempotent, acks=-1) writes each record once', async () => {
    const before = { ...proxy.stats.faults };
    const duplicatesBefore = proxy.stats.duplicateAnswers.length;
    useSchedule(RETRIED_FAULTS, proxy);
    const producer = new PlatformaticProducer({
      clientId: 'platformatic-idempotence',
      bootstrapBrokers: [proxy.broker],
      serializers: stringSerializers,
      idempotent: true,
      acks: ProduceAcks.ALL,
      timeout: REQUEST_TIMEOUT_MS,
      retries: 10,
      retryDelay: 200,
      autocreateTopics: true,
      // Kafka's default partitioner (murmur2), as tailbase places keys.
      partitioner: (_message, key) => partitionFor(key!.toString('utf8'), PARTITIONS),
    });
    const sends = documentsOf('plat');
    try {
      for (const messages of sends) {
        await producer.send({
          messages: messages.map((message) => ({ ...message, topic: 'plat' })),
        });
      }
    } finally {
      await producer.close(true);
    }
    const { faults: injected } = proxy.stats;
    expect(injected.duplicate - before.duplicate).toBeGreaterThan(0);
    expect(injected.cut - before.cut).toBeGreaterThan(0);
    expectFaultsAnsweredLikeTheOriginal(duplicatesBefore);
    await expectExactlyOnce('plat', sends);
  });
});
