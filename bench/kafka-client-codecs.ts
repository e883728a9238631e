/**
 * Client CPU per record on the Kafka data path, tailbase's codec (the gateway's batch sent as
 * built, fetched batches left raw) beside @platformatic/kafka's record batch encoder and decoder:
 * the figures behind shared/kafka-log's choice of codec (its README). One process, no broker:
 * `node dist/bench/kafka-client-codecs.js`.
 */
import { createRecordsBatch, Reader, readRecordsBatches } from '@platformatic/kafka';
import { decodeRecords, encodeBatch } from '../shared/batch-codec.js';
import { ApiKey, decodeResponse, encodeRequest, encodeResponse } from '../shared/kafka/index.js';

const RECORDS = 1000;
const ROUNDS = 300;
const WARMUP_ROUNDS = 20;
const BATCHES_A_FETCH = 4;

function measure(name: string, run: () => unknown, recordsARound = RECORDS): void {
  for (let i = 0; i < WARMUP_ROUNDS; i++) run();
  const before = process.cpuUsage();
  for (let i = 0; i < ROUNDS; i++) run();
  const used = process.cpuUsage(before);
  const micros = (used.user + used.system) / (ROUNDS * recordsARound);
  process.stdout.write(`${name}: ${micros.toFixed(3)} µs CPU a record\n`);
}

const value = Buffer.from(JSON.stringify({ text: 'x'.repeat(80) }));
const records = Array.from({ length: RECORDS }, (_, i) => ({
  key: `key-${i}`,
  value,
  timestampMs: Date.now(),
}));
const identity = { producerId: 1, producerEpoch: 0, baseSequence: 0 };
const batch = encodeBatch(records, identity);
measure('tailbase gateway: encodeBatch (built once whichever codec sends it)', () =>
  encodeBatch(records, identity),
);
measure('tailbase produce: encodeRequest(Produce v9) around the built batch', () =>
  encodeRequest(ApiKey.Produce, 9, 1, 'bench', {
    acks: -1,
    timeoutMs: 1000,
    topicData: [{ name: 't', partitionData: [{ index: 0, records: batch }] }],
  }),
);
const messages = records.map((r) => ({
  key: Buffer.from(r.key),
  value: r.value,
  topic: 't',
  partition: 0,
  timestamp: BigInt(r.timestampMs),
}));
measure('@platformatic/kafka produce: createRecordsBatch from messages', () =>
  createRecordsBatch(messages, { producerId: 1n, producerEpoch: 0 }),
);
const batches = Buffer.concat(Array.from({ length: BATCHES_A_FETCH }, () => batch));
const answer = encodeResponse(ApiKey.Fetch, 12, 1, {
  responses: [
    {
      topic: 't',
      partitions: [
        { partitionIndex: 0, highWatermark: RECORDS * BATCHES_A_FETCH, records: batches },
      ],
    },
  ],
}).subarray(4);
const fetched = RECORDS * BATCHES_A_FETCH;
measure(
  'tailbase fetch: decodeResponse(Fetch v12), batches left raw',
  () => decodeResponse(ApiKey.Fetch, 12, answer),
  fetched,
);
measure(
  'tailbase serve-node: decodeRecords (done once whichever codec fetched)',
  () => {
    for (let i = 0; i < BATCHES_A_FETCH; i++) decodeRecords(batch);
  },
  fetched,
);
measure(
  '@platformatic/kafka fetch: readRecordsBatches into message objects',
  () => readRecordsBatches(Reader.from(batches)),
  fetched,
);
