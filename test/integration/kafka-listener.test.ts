/**
 * The Kafka listener's APIs and limits over a real log-node, spoken by hand through the codec:
 * every limit of its config enforced, SASL required where it must be, answers in request order,
 * and the data-path APIs' errors as Kafka clients expect them.
 */
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { encodeBatch } from '../../shared/batch-codec.js';
import { ApiKey, ErrorCode, encodeRequest } from '../../shared/kafka/index.js';
import { startKafkaListener } from '../../log-node/kafka/index.js';
import { createLogger } from '../../shared/logger.js';
import { partitionFor } from '../../shared/partitioner.js';
import { CONSUMER_OFFSETS_TOPIC, SETTINGS_TOPIC } from '../../shared/topics.js';
import { keysIn } from '../harness/keys.js';
import { readPartition, recordsOf } from '../harness/log-batches.js';
import { RawKafkaConnection, startKafkaNode, type KafkaNode } from '../harness/kafka.js';

const doc = (key: string, value: unknown, timestampMs = Date.now()) => ({
  key,
  value: value === null ? null : Buffer.from(JSON.stringify(value)),
  timestampMs,
});

const produceBody = (topic: string, partition: number, records: Buffer, acks = -1) => ({
  acks,
  timeoutMs: 5_000,
  topicData: [{ name: topic, partitionData: [{ index: partition, records }] }],
});

let kafka: KafkaNode | undefined;
const open: RawKafkaConnection[] = [];
async function connect(): Promise<RawKafkaConnection> {
  const connection = await RawKafkaConnection.open(kafka!.listener.port);
  open.push(connection);
  return connection;
}
afterEach(async () => {
  for (const connection of open.splice(0)) connection.destroy();
  await kafka?.stop();
  kafka = undefined;
});

describe('APIs', () => {
  it('ApiVersions lists the served APIs; an unknown version gets error 35 and the ranges (KIP-511)', async () => {
    kafka = await startKafkaNode();
    const connection = await connect();
    const answer = await connection.request(ApiKey.ApiVersions, 3, {
      clientSoftwareName: 'test',
      clientSoftwareVersion: '1',
    });
    expect(answer.errorCode).toBe(0);
    const keys = answer.apiKeys.map((range) => range.apiKey);
    expect(keys).toEqual(expect.arrayContaining([0, 1, 2, 3, 18, 19, 22, 32]));
    expect(keys).not.toContain(ApiKey.SaslHandshake);
    const future = Buffer.from(encodeRequest(ApiKey.ApiVersions, 0, 9, 'x', {}));
    future.writeInt16BE(99, 6);
    connection.send(future);
    const frame = await connection.nextFrame();
    expect(frame.readInt32BE(0)).toBe(9);
    expect(frame.readInt16BE(4)).toBe(ErrorCode.UNSUPPORTED_VERSION);
    expect(frame.readInt32BE(6)).toBe(answer.apiKeys.length);
    expect((await connection.request(ApiKey.Metadata, 1, { topics: [] })).topics).toEqual([]);
  });

  it('Metadata: internal topics marked, auto-creation only when allowed, bad names refused', async () => {
    kafka = await startKafkaNode({ partitions: 3 });
    const connection = await connect();
    const asked = await connection.request(ApiKey.Metadata, 9, {
      topics: [{ name: 'fresh' }, { name: 'Not-A-Collection' }, { name: CONSUMER_OFFSETS_TOPIC }],
      allowAutoTopicCreation: false,
    });
    expect(
      asked.topics.map((t) => [t.name, t.errorCode, t.isInternal, t.partitions.length]),
    ).toEqual([
      ['fresh', ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, false, 0],
      ['Not-A-Collection', ErrorCode.INVALID_TOPIC_EXCEPTION, false, 0],
      [CONSUMER_OFFSETS_TOPIC, 0, true, 1],
    ]);
    expect(asked.brokers).toEqual([
      { nodeId: 0, host: '127.0.0.1', port: kafka.listener.port, rack: null },
    ]);
    expect(asked.clusterId).toBe(kafka.node.clusterId);
    expect(asked.controllerId).toBe(0);
    const created = await connection.request(ApiKey.Metadata, 9, {
      topics: [{ name: 'fresh' }],
      allowAutoTopicCreation: true,
    });
    expect(created.topics[0].errorCode).toBe(0);
    expect(created.topics[0].partitions.map((p) => p.leaderId)).toEqual([0, 0, 0]);
    expect((await kafka.node.client.topics()).map((t) => t.name)).toContain('fresh');
  });

  it('Produce: a value that is not a JSON object fails its partition, naming the record, and writes nothing', async () => {
    kafka = await startKafkaNode({ partitions: 2 });
    const connection = await connect();
    // Keys in their own murmur2 partitions, so the only fault is the value of record 1.
    const [a, b, c] = keysIn(0, 2, 3);
    const [d, e] = keysIn(1, 2, 2);
    const bad = encodeBatch([doc(a, { ok: 1 }), doc(b, [1, 2]), doc(c, null)]);
    const good = encodeBatch([doc(d, { ok: 2 }), doc(e, null)]);
    const answer = await connection.request(ApiKey.Produce, 9, {
      acks: -1,
      timeoutMs: 5_000,
      topicData: [
        {
          name: 'docs',
          partitionData: [
            { index: 0, records: bad },
            { index: 1, records: good },
          ],
        },
        { name: CONSUMER_OFFSETS_TOPIC, partitionData: [{ index: 0, records: good }] },
      ],
    });
    const [docs, internal] = answer.responses;
    expect(docs.partitionResponses[0]).toMatchObject({
      index: 0,
      errorCode: ErrorCode.INVALID_RECORD,
      recordErrors: [{ batchIndex: 1 }],
    });
    expect(docs.partitionResponses[1]).toMatchObject({ errorCode: 0, baseOffset: 0n });
    expect(internal.partitionResponses[0].errorCode).toBe(ErrorCode.TOPIC_AUTHORIZATION_FAILED);
    const offsets = await kafka.node.client.offsets();
    const end = (topic: string, partition: number) =>
      offsets.find((o) => o.topic === topic && o.partition === partition)?.endOffset;
    expect([end('docs', 0), end('docs', 1), end(CONSUMER_OFFSETS_TOPIC, 0)]).toEqual([0, 2, 0]);
  });

  it('Produce: two batches for one partition are refused whole, as Kafka refuses them (v3+)', async () => {
    kafka = await startKafkaNode({ partitions: 1 });
    const connection = await connect();
    const key = 'k';
    const two = Buffer.concat([
      encodeBatch([doc(key, { n: 1 })]),
      encodeBatch([doc(key, { n: 2 })]),
    ]);
    const answer = await connection.request(ApiKey.Produce, 9, produceBody('pairs', 0, two));
    expect(answer.responses[0].partitionResponses[0].errorCode).toBe(ErrorCode.INVALID_RECORD);
    // Refused whole: not even the topic was created.
    expect((await kafka.node.client.topics()).map((t) => t.name)).not.toContain('pairs');
  });

  it("Produce: a key outside its murmur2 partition is refused (librdkafka's default partitioner is not Kafka's)", async () => {
    kafka = await startKafkaNode({ partitions: 4 });
    const connection = await connect();
    const key = 'dune';
    const home = partitionFor(key, 4);
    const away = (home + 1) % 4;
    const wrong = await connection.request(
      ApiKey.Produce,
      9,
      produceBody('placed', away, encodeBatch([doc(key, { n: 1 })])),
    );
    const refused = wrong.responses[0].partitionResponses[0];
    expect(refused.errorCode).toBe(ErrorCode.INVALID_RECORD);
    expect(refused.errorMessage).toContain('murmur2');
    const right = await connection.request(
      ApiKey.Produce,
      9,
      produceBody('placed', home, encodeBatch([doc(key, { n: 1 })])),
    );
    expect(right.responses[0].partitionResponses[0].errorCode).toBe(0);
    const offsets = await kafka.node.client.offsets();
    const ends = offsets.filter((o) => o.topic === 'placed').map((o) => o.endOffset);
    expect(ends).toEqual([0, 1, 2, 3].map((p) => (p === home ? 1 : 0)));
  });

  it('Produce refused, or to a missing topic with auto-creation off, creates no topic', async () => {
    kafka = await startKafkaNode({ partitions: 2, autoCreateTopics: false });
    const connection = await connect();
    const key = 'k';
    const partition = partitionFor(key, 2);
    // An idempotent producer's batch at sequence 5 on a partition it never wrote: unknown.
    const unknownProducer = encodeBatch([doc(key, { n: 1 })], {
      producerId: 77,
      producerEpoch: 0,
      baseSequence: 5,
    });
    const refused = await connection.request(
      ApiKey.Produce,
      9,
      produceBody('ghost', partition, unknownProducer),
    );
    expect(refused.responses[0].partitionResponses[0].errorCode).not.toBe(0);
    const plain = await connection.request(
      ApiKey.Produce,
      9,
      produceBody('ghost', partition, encodeBatch([doc(key, { n: 1 })])),
    );
    expect(plain.responses[0].partitionResponses[0].errorCode).toBe(
      ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    );
    expect((await kafka.node.client.topics()).map((t) => t.name)).not.toContain('ghost');
  });

  it('Produce with acks=0 is answered by nothing, and the next answer is still in order', async () => {
    kafka = await startKafkaNode({ partitions: 1 });
    const connection = await connect();
    connection.sendRequest(
      ApiKey.Produce,
      8,
      produceBody('quiet', 0, encodeBatch([doc('k', {})]), 0),
    );
    const metadata = await connection.request(ApiKey.Metadata, 1, { topics: [{ name: 'quiet' }] });
    expect(metadata.topics[0].errorCode).toBe(0);
    const { batches } = await readPartition(kafka.node.client, 'quiet', 0);
    expect(recordsOf(batches).map((r) => r.key)).toEqual(['k']);
  });

  it('Produce: a corrupt batch is CORRUPT_MESSAGE and the connection stays open', async () => {
    kafka = await startKafkaNode({ partitions: 1 });
    const connection = await connect();
    const batch = encodeBatch([doc('k', { a: 1 })]);
    batch[batch.length - 1] ^= 0xff;
    const answer = await connection.request(ApiKey.Produce, 8, produceBody('crc', 0, batch));
    expect(answer.responses[0].partitionResponses[0].errorCode).toBe(ErrorCode.CORRUPT_MESSAGE);
    expect(
      (await connection.request(ApiKey.Metadata, 1, { topics: null })).topics.length,
    ).toBeGreaterThan(0);
  });

  it('Fetch long-polls until an append, answers the stored bytes, and says when an offset is out of range', async () => {
    kafka = await startKafkaNode({ partitions: 1 });
    const { client } = kafka.node;
    await client.append('feed', 0, encodeBatch([doc('a', { n: 1 })]));
    const connection = await connect();
    const fetchAt = (offset: number, maxWaitMs: number) =>
      connection.request(
        ApiKey.Fetch,
        12,
        {
          maxWaitMs,
          minBytes: 1,
          maxBytes: 1 << 20,
          topics: [
            {
              topic: 'feed',
              partitions: [{ partition: 0, fetchOffset: offset, partitionMaxBytes: 1 << 20 }],
            },
          ],
        },
        10_000,
      );
    const appended = encodeBatch([doc('b', { n: 2 })]);
    const startedMs = Date.now();
    const timer = setTimeout(() => void client.append('feed', 0, appended), 300);
    const answer = await fetchAt(1, 5_000);
    clearTimeout(timer);
    expect(Date.now() - startedMs).toBeGreaterThanOrEqual(250);
    const partition = answer.responses[0].partitions[0];
    expect(answer.sessionId).toBe(0);
    expect(partition).toMatchObject({
      errorCode: 0,
      highWatermark: 2n,
      lastStableOffset: 2n,
      logStartOffset: 0n,
    });
    const stored = await client.read('feed', 0, 1);
    expect(partition.records).toEqual(stored.batches);
    const outside = (await fetchAt(5, 0)).responses[0].partitions[0];
    expect(outside.errorCode).toBe(ErrorCode.OFFSET_OUT_OF_RANGE);
    expect(outside.highWatermark).toBe(2n);
  });

  it('ListOffsets: latest, earliest, and the first offset at or after a timestamp', async () => {
    kafka = await startKafkaNode({ partitions: 1 });
    await kafka.node.client.append(
      'times',
      0,
      encodeBatch([doc('a', {}, 1_000), doc('b', {}, 2_000)]),
    );
    await kafka.node.client.append('times', 0, encodeBatch([doc('c', {}, 3_000)]));
    const connection = await connect();
    const answer = await connection.request(ApiKey.ListOffsets, 5, {
      replicaId: -1,
      topics: [
        {
          name: 'times',
          partitions: [-1, -2, 1_500, 3_000, 9_000].map((timestamp) => ({
            partitionIndex: 0,
            timestamp,
          })),
        },
        { name: 'absent', partitions: [{ partitionIndex: 0, timestamp: -1 }] },
      ],
    });
    expect(answer.topics[0].partitions.map((p) => [p.errorCode, p.offset, p.timestamp])).toEqual([
      [0, 3n, -1n],
      [0, 0n, -1n],
      [0, 1n, 2_000n],
      [0, 2n, 3_000n],
      [0, -1n, -1n],
    ]);
    expect(answer.topics[1].partitions[0].errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
  });

  it('InitProducerId hands out ids and refuses transactional ids', async () => {
    kafka = await startKafkaNode({ partitions: 1 });
    const connection = await connect();
    const one = await connection.request(ApiKey.InitProducerId, 4, {
      transactionalId: null,
      transactionTimeoutMs: 0,
    });
    const two = await connection.request(ApiKey.InitProducerId, 4, {
      transactionalId: null,
      transactionTimeoutMs: 0,
    });
    expect([one.errorCode, two.errorCode]).toEqual([0, 0]);
    expect(two.producerId).not.toBe(one.producerId);
    const transactional = await connection.request(ApiKey.InitProducerId, 4, {
      transactionalId: 'tx',
      transactionTimeoutMs: 1_000,
    });
    expect(transactional.errorCode).toBe(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
  });

  it('CreateTopics and DescribeConfigs: collections with the cluster partition count and five configs', async () => {
    kafka = await startKafkaNode({ partitions: 2 });
    const connection = await connect();
    const topic = (
      name: string,
      numPartitions = -1,
      configs: { name: string; value: string }[] = [],
    ) => ({
      name,
      numPartitions,
      replicationFactor: -1,
      assignments: [],
      configs,
    });
    const dry = await connection.request(ApiKey.CreateTopics, 7, {
      topics: [topic('planned', -1, [{ name: 'retention.ms', value: '60000' }])],
      validateOnly: true,
    });
    expect(dry.topics[0].errorCode).toBe(0);
    expect((await kafka.node.client.topics()).map((t) => t.name)).not.toContain('planned');
    const made = await connection.request(ApiKey.CreateTopics, 7, {
      topics: [
        topic('made', 2, [{ name: 'retention.ms', value: '60000' }]),
        topic('wrong', 5),
        topic('Bad Name'),
        topic('odd', -1, [{ name: 'segment.bytes', value: '1' }]),
      ],
    });
    expect(made.topics.map((t) => t.errorCode)).toEqual([
      0,
      ErrorCode.INVALID_PARTITIONS,
      ErrorCode.INVALID_TOPIC_EXCEPTION,
      ErrorCode.INVALID_CONFIG,
    ]);
    const again = await connection.request(ApiKey.CreateTopics, 7, { topics: [topic('made')] });
    expect(again.topics[0].errorCode).toBe(ErrorCode.TOPIC_ALREADY_EXISTS);
    const described = await connection.request(ApiKey.DescribeConfigs, 4, {
      resources: [
        { resourceType: 2, resourceName: 'made', configurationKeys: null },
        { resourceType: 4, resourceName: '0', configurationKeys: null },
      ],
    });
    const configs = Object.fromEntries(
      described.results[0].configs.map((c) => [c.name, [c.value, c.configSource]]),
    );
    expect(configs['retention.ms']).toEqual(['60000', 1]);
    expect(Object.keys(configs).sort()).toEqual([
      'cleanup.policy',
      'delete.retention.ms',
      'max.message.bytes',
      'retention.bytes',
      'retention.ms',
      'tailbase.incarnation',
    ]);
    expect(configs['cleanup.policy'][1]).toBe(5);
    // Read-only: how many topics of the name were dropped before this one.
    expect(configs['tailbase.incarnation']).toEqual(['0', 1]);
    // The broker resource says the collections' partition count (a Kafka client learns it there)
    // and the partitions this node stores (its peers learn it there).
    expect(described.results[1]).toMatchObject({
      errorCode: 0,
      configs: [
        { name: 'num.partitions', value: '2', readOnly: true },
        { name: 'tailbase.hosted.partitions', value: '0,1', readOnly: true },
      ],
    });
  });

  it("CreateTopics: a prefixed internal topic (a tailbase's --topic-prefix) has one compacted partition", async () => {
    kafka = await startKafkaNode({ partitions: 2 });
    const connection = await connect();
    const topic = (name: string, numPartitions: number) => ({
      name,
      numPartitions,
      replicationFactor: -1,
      assignments: [],
      configs: [],
    });
    const made = await connection.request(ApiKey.CreateTopics, 7, {
      topics: [topic('tb-__tailbase_settings', 1), topic('other.__tailbase_settings', 2)],
    });
    expect(made.topics.map((t) => [t.errorCode, t.numPartitions])).toEqual([
      [0, 1],
      [ErrorCode.INVALID_PARTITIONS, -1],
    ]);
    const settings = (await kafka.node.client.topics()).find(
      (t) => t.name === 'tb-__tailbase_settings',
    );
    expect(settings).toMatchObject({ partitions: 1, configs: { cleanupPolicy: 'compact' } });
  });
});

describe('SASL/PLAIN with the API keys', () => {
  it('before authentication only ApiVersions and SASL; a wrong key fails and closes; a right one opens', async () => {
    kafka = await startKafkaNode({
      apiKeys: [{ key: 'secret-key', scopes: ['read', 'write', 'admin'] }],
    });
    const early = await connect();
    expect((await early.request(ApiKey.ApiVersions, 0, {})).apiKeys.map((r) => r.apiKey)).toContain(
      ApiKey.SaslAuthenticate,
    );
    early.sendRequest(ApiKey.Metadata, 1, { topics: null });
    expect(await early.closedWithin()).toBe(true);

    const wrong = await connect();
    expect((await wrong.request(ApiKey.SaslHandshake, 1, { mechanism: 'PLAIN' })).errorCode).toBe(
      0,
    );
    const refused = await wrong.request(ApiKey.SaslAuthenticate, 2, {
      authBytes: Buffer.from('\0me\0not-the-key'),
    });
    expect(refused.errorCode).toBe(ErrorCode.SASL_AUTHENTICATION_FAILED);
    expect(await wrong.closedWithin()).toBe(true);

    const right = await connect();
    expect(
      (await right.request(ApiKey.SaslHandshake, 1, { mechanism: 'SCRAM-SHA-256' })).errorCode,
    ).toBe(ErrorCode.UNSUPPORTED_SASL_MECHANISM);
    await right.request(ApiKey.SaslHandshake, 1, { mechanism: 'PLAIN' });
    const accepted = await right.request(ApiKey.SaslAuthenticate, 2, {
      authBytes: Buffer.from('\0me\0secret-key'),
    });
    expect(accepted.errorCode).toBe(0);
    expect((await right.request(ApiKey.Metadata, 1, { topics: null })).brokers).toHaveLength(1);
  });

  it('frameBytesMaxUnauthenticated bounds frames until SASL succeeds; frameBytesMax after', async () => {
    kafka = await startKafkaNode({
      apiKeys: [{ key: 'secret-key', scopes: ['read', 'write', 'admin'] }],
      frameBytesMaxUnauthenticated: 1024,
      frameBytesMax: 64 * 1024,
      // The Metadata below names 200 topics to be large, not to make them: creating each costs
      // fsyncs, which a loaded machine takes seconds over.
      autoCreateTopics: false,
    });
    // A SaslHandshake (allowed before authentication, and answered when small) of about 4 KiB.
    const stranger = await connect();
    const small = await stranger.request(ApiKey.SaslHandshake, 1, { mechanism: 'X'.repeat(100) });
    expect(small.errorCode).toBe(ErrorCode.UNSUPPORTED_SASL_MECHANISM);
    stranger.sendRequest(ApiKey.SaslHandshake, 1, { mechanism: 'X'.repeat(4000) });
    expect(await stranger.closedWithin()).toBe(true);

    // Once authenticated, a request of that size is served.
    const manyTopics = { topics: Array.from({ length: 200 }, (_, i) => ({ name: `t${i}` })) };

    const member = await connect();
    await member.request(ApiKey.SaslHandshake, 1, { mechanism: 'PLAIN' });
    await member.request(ApiKey.SaslAuthenticate, 2, {
      authBytes: Buffer.from('\0me\0secret-key'),
    });
    const answer = await member.request(ApiKey.Metadata, 1, manyTopics);
    expect(answer.topics).toHaveLength(200);
  });

  it('requestElementsMax bounds the array elements one request decodes into', async () => {
    kafka = await startKafkaNode({ requestElementsMax: 100, autoCreateTopics: false });
    const within = await connect();
    const small = { topics: Array.from({ length: 100 }, (_, i) => ({ name: `t${i}` })) };
    expect((await within.request(ApiKey.Metadata, 1, small)).topics).toHaveLength(100);
    const past = await connect();
    past.sendRequest(ApiKey.Metadata, 1, {
      topics: Array.from({ length: 101 }, (_, i) => ({ name: `t${i}` })),
    });
    expect(await past.closedWithin()).toBe(true);
  });

  it("a key's scopes bound the APIs: read consumes, write produces, admin creates topics (groups: kafka-group-coordinator.test.ts)", async () => {
    kafka = await startKafkaNode({
      partitions: 1,
      apiKeys: [
        { key: 'reader-key-0123456789', scopes: ['read'] },
        { key: 'writer-key-0123456789', scopes: ['write'] },
      ],
    });
    await kafka.node.client.append('scoped', 0, encodeBatch([doc('seed', { n: 0 })]));
    const as = async (key: string) => {
      const connection = await connect();
      await connection.request(ApiKey.SaslHandshake, 1, { mechanism: 'PLAIN' });
      const auth = await connection.request(ApiKey.SaslAuthenticate, 2, {
        authBytes: Buffer.from(`\0me\0${key}`),
      });
      expect(auth.errorCode).toBe(0);
      return connection;
    };
    const fetchBody = {
      maxWaitMs: 0,
      minBytes: 0,
      maxBytes: 1_000_000,
      topics: [
        {
          topic: 'scoped',
          partitions: [{ partition: 0, fetchOffset: 0n, partitionMaxBytes: 1_000_000 }],
        },
      ],
    };
    const reader = await as('reader-key-0123456789');
    const produced = await reader.request(
      ApiKey.Produce,
      9,
      produceBody('scoped', 0, encodeBatch([doc('seed', { n: 1 })])),
    );
    expect(produced.responses[0].partitionResponses[0].errorCode).toBe(
      ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    );
    expect(
      (
        await reader.request(ApiKey.InitProducerId, 4, {
          transactionalId: null,
          transactionTimeoutMs: 1000,
          producerId: -1n,
          producerEpoch: -1,
        })
      ).errorCode,
    ).toBe(ErrorCode.CLUSTER_AUTHORIZATION_FAILED);
    const created = await reader.request(ApiKey.CreateTopics, 7, {
      topics: [
        { name: 'made', numPartitions: -1, replicationFactor: -1, assignments: [], configs: [] },
      ],
      timeoutMs: 1000,
      validateOnly: false,
    });
    expect(created.topics[0].errorCode).toBe(ErrorCode.TOPIC_AUTHORIZATION_FAILED);
    const read = await reader.request(ApiKey.Fetch, 12, fetchBody);
    expect(read.responses[0].partitions[0].errorCode).toBe(0);

    const writer = await as('writer-key-0123456789');
    const fetched = await writer.request(ApiKey.Fetch, 12, fetchBody);
    expect(fetched.responses[0].partitions[0].errorCode).toBe(ErrorCode.TOPIC_AUTHORIZATION_FAILED);
    const written = await writer.request(
      ApiKey.Produce,
      9,
      produceBody('scoped', 0, encodeBatch([doc('seed', { n: 2 })])),
    );
    expect(written.responses[0].partitionResponses[0].errorCode).toBe(0);
    const offsets = await kafka.node.client.offsets();
    expect(offsets.find((o) => o.topic === 'scoped')?.endOffset).toBe(2);
    expect((await kafka.node.client.topics()).map((t) => t.name)).not.toContain('made');
  });

  it("the settings topic takes a gateway's records, and topic configs change, with an admin key only", async () => {
    kafka = await startKafkaNode({
      partitions: 1,
      apiKeys: [
        { key: 'writer-key-0123456789', scopes: ['read', 'write'] },
        { key: 'admin-key-01234567890', scopes: ['read', 'write', 'admin'] },
      ],
    });
    const as = async (key: string) => {
      const connection = await connect();
      await connection.request(ApiKey.SaslHandshake, 1, { mechanism: 'PLAIN' });
      await connection.request(ApiKey.SaslAuthenticate, 2, {
        authBytes: Buffer.from(`\0me\0${key}`),
      });
      return connection;
    };
    const settings = encodeBatch([doc('notes', { searchable: ['title'] })]);
    const errorOf = async (key: string, topic: string) =>
      (await (await as(key)).request(ApiKey.Produce, 9, produceBody(topic, 0, settings)))
        .responses[0].partitionResponses[0].errorCode;
    expect(await errorOf('writer-key-0123456789', SETTINGS_TOPIC)).toBe(
      ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    );
    expect(await errorOf('admin-key-01234567890', CONSUMER_OFFSETS_TOPIC)).toBe(
      ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    );
    expect(await errorOf('admin-key-01234567890', SETTINGS_TOPIC)).toBe(ErrorCode.NONE);
    const offsets = await kafka.node.client.offsets();
    const end = (topic: string) => offsets.find((o) => o.topic === topic)?.endOffset;
    expect([end(SETTINGS_TOPIC), end(CONSUMER_OFFSETS_TOPIC)]).toEqual([1, 0]);

    // A topic's configs change with the admin scope only.
    const { client } = kafka.node;
    await client.ensureTopic('altered');
    const alter = async (key: string, resourceName = 'altered', validateOnly = false) =>
      (
        await (
          await as(key)
        ).request(ApiKey.IncrementalAlterConfigs, 1, {
          resources: [
            {
              resourceType: 2,
              resourceName,
              configs: [{ name: 'retention.ms', configOperation: 0, value: '60000' }],
            },
          ],
          validateOnly,
        })
      ).responses[0].errorCode;
    expect(await alter('writer-key-0123456789')).toBe(ErrorCode.TOPIC_AUTHORIZATION_FAILED);
    const topic = async () =>
      (await client.topics()).find((t) => t.name === 'altered')!.configs.retentionMs;
    expect(await topic()).not.toBe(60_000);
    expect(await alter('admin-key-01234567890')).toBe(ErrorCode.NONE);
    expect(await topic()).toBe(60_000);
    // A missing topic is named so, checked or changed, and not created.
    for (const validateOnly of [true, false]) {
      expect(await alter('admin-key-01234567890', 'never-made', validateOnly)).toBe(
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
      );
    }
    expect((await client.topics()).map((t) => t.name)).not.toContain('never-made');
  });

  it('listening off loopback without API keys is refused at start', async () => {
    await expect(
      startKafkaListener({
        log: {} as never,
        logCreatingNothing: {} as never,
        host: '0.0.0.0',
        port: 0,
        logger: createLogger('kafka', 'silent'),
        topicConfigDefaults: () => ({}) as never,
      }),
    ).rejects.toThrow(/requires SASL/);
  });
});

describe('limits', () => {
  it('connectionsMax: one connection past it is accepted and closed at once', async () => {
    kafka = await startKafkaNode({ connectionsMax: 2 });
    const [a, b] = [await connect(), await connect()];
    await a.request(ApiKey.ApiVersions, 0, {});
    await b.request(ApiKey.ApiVersions, 0, {});
    const third = await connect();
    expect(await third.closedWithin()).toBe(true);
    expect((await a.request(ApiKey.ApiVersions, 0, {})).errorCode).toBe(0);
  });

  it('inFlightRequestsMax: no more requests in progress at once, every one answered in order', async () => {
    let running = 0;
    let runningMax = 0;
    const releases: (() => void)[] = [];
    kafka = await startKafkaNode({
      inFlightRequestsMax: 2,
      handlers: {
        // A stand-in API whose answers the test releases one at a time.
        [ApiKey.Heartbeat]: async () => {
          running++;
          runningMax = Math.max(runningMax, running);
          await new Promise<void>((resolve) => releases.push(resolve));
          running--;
          return { throttleTimeMs: 0, errorCode: 0 };
        },
      },
    });
    const connection = await connect();
    const ids = Array.from({ length: 6 }, () =>
      connection.sendRequest(ApiKey.Heartbeat, 0, { groupId: 'g', generationId: 1, memberId: 'm' }),
    );
    const answered: number[] = [];
    for (let i = 0; i < ids.length; i++) {
      const deadline = Date.now() + 5_000;
      while (releases.length === 0 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 10));
      expect(running).toBeLessThanOrEqual(2);
      releases.shift()!();
      answered.push((await connection.nextFrame()).readInt32BE(0));
    }
    expect(runningMax).toBe(2);
    expect(answered).toEqual(ids);
  });

  it('idleMsMax closes a quiet connection; authenticateMsMax one that never authenticates', async () => {
    kafka = await startKafkaNode({
      idleMsMax: 200,
      apiKeys: [{ key: 'k', scopes: ['read'] }],
      authenticateMsMax: 300,
    });
    const quiet = await connect();
    expect(await quiet.closedWithin(3_000)).toBe(true);
    await kafka.stop();
    kafka = await startKafkaNode({
      apiKeys: [{ key: 'k', scopes: ['read'] }],
      authenticateMsMax: 300,
    });
    const unauthenticated = await connect();
    await unauthenticated.request(ApiKey.ApiVersions, 0, {});
    expect(await unauthenticated.closedWithin(3_000)).toBe(true);
  });

  it('fetchWaitMsMax bounds the long-poll; fetchBytesMax the answer (at least one batch)', async () => {
    kafka = await startKafkaNode({ partitions: 1, fetchWaitMsMax: 200, fetchBytesMax: 1_000 });
    const connection = await connect();
    const fetch = (offset: number) =>
      connection.request(ApiKey.Fetch, 12, {
        maxWaitMs: 20_000,
        minBytes: 1 << 20,
        maxBytes: 1 << 30,
        topics: [
          {
            topic: 'big',
            partitions: [{ partition: 0, fetchOffset: offset, partitionMaxBytes: 1 << 30 }],
          },
        ],
      });
    await kafka.node.client.ensureTopic('big');
    const startedMs = Date.now();
    const empty = await fetch(0);
    expect(Date.now() - startedMs).toBeLessThan(3_000);
    expect(empty.responses[0].partitions[0].records).toEqual(Buffer.alloc(0));
    const batch = encodeBatch([doc('k', { text: 'x'.repeat(600) })]);
    for (let i = 0; i < 3; i++) await kafka.node.client.append('big', 0, batch);
    expect((await fetch(0)).responses[0].partitions[0].records!.length).toBe(batch.length);
  });

  it('listOffsetsScanBytesMax bounds a search by timestamp', async () => {
    kafka = await startKafkaNode({ partitions: 1, listOffsetsScanBytesMax: 100 });
    for (let i = 0; i < 3; i++) {
      await kafka.node.client.append('scan', 0, encodeBatch([doc(`k${i}`, { i }, 1_000 + i)]));
    }
    const connection = await connect();
    const answer = await connection.request(ApiKey.ListOffsets, 5, {
      replicaId: -1,
      topics: [{ name: 'scan', partitions: [{ partitionIndex: 0, timestamp: 1_002 }] }],
    });
    expect(answer.topics[0].partitions[0].errorCode).toBe(ErrorCode.UNKNOWN_SERVER_ERROR);
  });

  it('a port in use is an error naming --kafka-port', async () => {
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as net.AddressInfo).port;
    try {
      await expect(startKafkaNode({ port })).rejects.toThrow(/--kafka-port/);
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });
});
