/**
 * The codec against real clients nobody here wrote: kafkajs 2.2.4, @platformatic/kafka 1.35 and
 * kcat (librdkafka 2.0.x). A tiny broker on a loopback port records every request frame, answers
 * ApiVersions, Metadata and Produce with this codec's encoder (one broker, the asked topics with one
 * partition each, every batch appended at offset 0) and closes the connection on anything else.
 * The clients must accept those answers (their calls resolve) and their requests must decode to
 * what they sent.
 */
import { execFile } from 'node:child_process';
import net from 'node:net';
import { Admin, Producer, stringSerializers } from '@platformatic/kafka';
import { Kafka, logLevel } from 'kafkajs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  ApiKey,
  KafkaFrameSplitter,
  decodeRequest,
  encodeResponse,
  supportedVersions,
  unsupportedVersionResponse,
  type DecodedRequest,
  type KafkaRequest,
} from '../../shared/kafka/index.js';

const CLIENT_WAIT_MS = 15_000;
const KCAT = '/usr/bin/kcat';

class RecordingBroker {
  readonly requests: DecodedRequest[] = [];
  readonly failures: Error[] = [];
  private readonly sockets = new Set<net.Socket>();
  private readonly server = net.createServer((socket) => this.serve(socket));
  port = 0;

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** The supported requests of one API the broker got, in order. */
  received<K extends ApiKey>(apiKey: K): Extract<KafkaRequest, { apiKey: K }>[] {
    return this.requests.filter(
      (request): request is Extract<KafkaRequest, { apiKey: K }> =>
        request.kind === 'request' && request.apiKey === apiKey,
    );
  }

  private serve(socket: net.Socket): void {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    const splitter = new KafkaFrameSplitter();
    socket.on('data', (chunk) => {
      try {
        for (const frame of splitter.push(chunk)) {
          const request = decodeRequest(frame);
          this.requests.push(request);
          const answer = this.answer(request);
          if (answer) socket.write(answer);
          else if (answer === null) socket.destroy();
        }
      } catch (error) {
        this.failures.push(error as Error);
        socket.destroy();
      }
    });
  }

  /** The answer to a request; undefined for none (a Produce with acks 0), null to close. */
  private answer(request: DecodedRequest): Buffer | null | undefined {
    if (request.kind !== 'request') return unsupportedVersionResponse(request);
    const { apiVersion, correlationId } = request;
    switch (request.apiKey) {
      case ApiKey.ApiVersions:
        return encodeResponse(ApiKey.ApiVersions, apiVersion, correlationId, {
          apiKeys: supportedVersions(),
        });
      case ApiKey.Metadata: {
        const names = request.body.topics?.map((topic) => topic.name) ?? [];
        return encodeResponse(ApiKey.Metadata, apiVersion, correlationId, {
          brokers: [{ nodeId: 0, host: '127.0.0.1', port: this.port }],
          clusterId: 'tailbase-test',
          controllerId: 0,
          topics: names.map((name) => ({
            name,
            partitions: [{ partitionIndex: 0, leaderId: 0, replicaNodes: [0], isrNodes: [0] }],
          })),
        });
      }
      case ApiKey.Produce:
        if (request.body.acks === 0) return undefined;
        return encodeResponse(ApiKey.Produce, apiVersion, correlationId, {
          responses: request.body.topicData.map((topic) => ({
            name: topic.name,
            partitionResponses: topic.partitionData.map((partition) => ({
              index: partition.index,
              baseOffset: 0n,
            })),
          })),
        });
      default:
        return null;
    }
  }
}

/** The one record batch of a Produce request's only partition, checked to be magic 2. */
function producedBatch(request: Extract<KafkaRequest, { apiKey: 0 }>): Buffer {
  expect(request.body.topicData).toHaveLength(1);
  expect(request.body.topicData[0].name).toBe('orders');
  const [partition] = request.body.topicData[0].partitionData;
  const records = partition.records!;
  expect(records.readInt32BE(8)).toBe(records.length - 12);
  expect(records[16]).toBe(2);
  return records;
}

/** Settles with `promise`, or fails after `ms` so that no test waits on a client forever. */
async function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

describe('real Kafka clients', () => {
  let broker: RecordingBroker;

  beforeEach(async () => {
    broker = new RecordingBroker();
    await broker.start();
  });

  afterEach(async () => {
    await broker.stop();
  });

  it('kafkajs 2.2.4: ApiVersions v2, then Metadata v6 for the asked topics', async () => {
    const kafka = new Kafka({
      clientId: 'kafkajs-probe',
      brokers: [`127.0.0.1:${broker.port}`],
      logLevel: logLevel.NOTHING,
      retry: { retries: 0 },
    });
    const admin = kafka.admin();
    try {
      await within(CLIENT_WAIT_MS, 'kafkajs connect', admin.connect());
      const metadata = await within(
        CLIENT_WAIT_MS,
        'kafkajs metadata',
        admin.fetchTopicMetadata({ topics: ['orders', 'élan'] }),
      );
      expect(metadata.topics.map((topic) => topic.name).sort()).toEqual(['orders', 'élan']);
    } finally {
      await within(CLIENT_WAIT_MS, 'kafkajs disconnect', admin.disconnect());
    }
    expect(broker.failures).toEqual([]);
    const [apiVersions] = broker.received(ApiKey.ApiVersions);
    expect(apiVersions).toMatchObject({ apiVersion: 2, clientId: 'kafkajs-probe' });
    const asked = broker.received(ApiKey.Metadata).filter((request) => request.body.topics?.length);
    expect(asked.length).toBeGreaterThan(0);
    for (const request of asked) {
      expect(request).toMatchObject({ apiVersion: 6, clientId: 'kafkajs-probe' });
      const names = request.body.topics!.map((topic) => topic.name);
      expect(names.sort()).toEqual(['orders', 'élan']);
      // kafkajs's admin client never asks for topics to be created (and shuffles their order).
      expect(request.body.allowAutoTopicCreation).toBe(false);
    }
  });

  it('@platformatic/kafka 1.35: ApiVersions v3 (KIP-511 names), then Metadata v9', async () => {
    const admin = new Admin({
      clientId: 'platformatic-probe',
      bootstrapBrokers: [`127.0.0.1:${broker.port}`],
      retries: 0,
      timeout: CLIENT_WAIT_MS,
    });
    try {
      const metadata = await within(
        CLIENT_WAIT_MS,
        'platformatic metadata',
        admin.metadata({ topics: ['orders'] }),
      );
      expect([...metadata.topics.keys()]).toEqual(['orders']);
    } finally {
      await within(CLIENT_WAIT_MS, 'platformatic close', admin.close());
    }
    expect(broker.failures).toEqual([]);
    const [apiVersions] = broker.received(ApiKey.ApiVersions);
    expect(apiVersions).toMatchObject({
      apiVersion: 3,
      clientId: 'platformatic-probe',
      body: { clientSoftwareName: 'platformatic-kafka' },
    });
    expect(apiVersions.body.clientSoftwareVersion).toMatch(/^1\.35\./);
    const [metadata] = broker.received(ApiKey.Metadata);
    expect(metadata).toMatchObject({ apiVersion: 9, clientId: 'platformatic-probe' });
    expect(metadata.body.topics).toEqual([{ name: 'orders' }]);
  });

  it('kcat (librdkafka 2.0.x): ApiVersions v3, then Metadata v4', async () => {
    const port = broker.port;
    const output = await within(
      CLIENT_WAIT_MS + 1000,
      'kcat',
      new Promise<string>((resolve, reject) => {
        execFile(
          KCAT,
          ['-b', `127.0.0.1:${port}`, '-L', '-t', 'orders', '-m', '5', '-J'],
          { timeout: CLIENT_WAIT_MS, killSignal: 'SIGKILL' },
          (error, stdout, stderr) =>
            error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout),
        );
      }),
    );
    const listed = JSON.parse(output) as { topics: { topic: string }[]; brokers: unknown[] };
    expect(listed.topics.map((topic) => topic.topic)).toEqual(['orders']);
    expect(broker.failures).toEqual([]);
    const [apiVersions] = broker.received(ApiKey.ApiVersions);
    expect(apiVersions).toMatchObject({
      apiVersion: 3,
      clientId: 'rdkafka',
      body: { clientSoftwareName: 'librdkafka' },
    });
    expect(apiVersions.body.clientSoftwareVersion).toMatch(/^2\.0\./);
    const asked = broker.received(ApiKey.Metadata).filter((request) => request.body.topics?.length);
    expect(asked[0]).toMatchObject({ apiVersion: 4, clientId: 'rdkafka' });
    expect(asked[0].body.topics).toEqual([{ name: 'orders' }]);
  });

  it('kafkajs 2.2.4 producer: Produce v7', async () => {
    const kafka = new Kafka({
      clientId: 'kafkajs-producer',
      brokers: [`127.0.0.1:${broker.port}`],
      logLevel: logLevel.NOTHING,
      retry: { retries: 0 },
    });
    const producer = kafka.producer({ allowAutoTopicCreation: false });
    try {
      await within(CLIENT_WAIT_MS, 'kafkajs producer connect', producer.connect());
      const sent = producer.send({ topic: 'orders', messages: [{ key: 'k', value: 'hello' }] });
      const [result] = await within(CLIENT_WAIT_MS, 'kafkajs send', sent);
      expect(result).toMatchObject({ topicName: 'orders', partition: 0, baseOffset: '0' });
    } finally {
      await within(CLIENT_WAIT_MS, 'kafkajs producer disconnect', producer.disconnect());
    }
    expect(broker.failures).toEqual([]);
    const [produce] = broker.received(ApiKey.Produce);
    expect(produce).toMatchObject({ apiVersion: 7, clientId: 'kafkajs-producer' });
    expect(produce.body).toMatchObject({ transactionalId: null, acks: -1 });
    expect(producedBatch(produce).includes('hello')).toBe(true);
  });

  it('@platformatic/kafka 1.35 producer: Produce v11 (flexible)', async () => {
    const producer = new Producer({
      clientId: 'platformatic-producer',
      bootstrapBrokers: [`127.0.0.1:${broker.port}`],
      serializers: stringSerializers,
      retries: 0,
      timeout: CLIENT_WAIT_MS,
    });
    try {
      const sent = producer.send({ messages: [{ topic: 'orders', key: 'k', value: 'hello' }] });
      await within(CLIENT_WAIT_MS, 'platformatic send', sent);
    } finally {
      await within(CLIENT_WAIT_MS, 'platformatic producer close', producer.close());
    }
    expect(broker.failures).toEqual([]);
    const [produce] = broker.received(ApiKey.Produce);
    expect(produce).toMatchObject({ apiVersion: 11, clientId: 'platformatic-producer' });
    expect(producedBatch(produce).includes('hello')).toBe(true);
  });

  it('kcat (librdkafka 2.0.x) producer: Produce v7', async () => {
    const port = broker.port;
    await within(
      CLIENT_WAIT_MS + 1000,
      'kcat -P',
      new Promise<void>((resolve, reject) => {
        const child = execFile(
          KCAT,
          ['-b', `127.0.0.1:${port}`, '-P', '-t', 'orders', '-k', 'k', '-X', 'linger.ms=0'],
          { timeout: CLIENT_WAIT_MS, killSignal: 'SIGKILL' },
          (error, _stdout, stderr) =>
            error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(),
        );
        child.stdin!.end('hello\n');
      }),
    );
    expect(broker.failures).toEqual([]);
    const [produce] = broker.received(ApiKey.Produce);
    expect(produce).toMatchObject({ apiVersion: 7, clientId: 'rdkafka' });
    expect(producedBatch(produce).includes('hello')).toBe(true);
  });
});
