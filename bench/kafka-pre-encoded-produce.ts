/**
 * Produce requests encoded once (acks=-1, no producer id, so no idempotence state) and re-sent as
 * bytes over raw connections to a log-node's Kafka listener, each connection awaiting its answer
 * before it sends again, as wrk re-sends an HTTP body: the broker's own figure, the client's CPU
 * spent on the socket and not on encoding. Every answer is decoded and an error counted, so a
 * refused batch does not pass for a fast one. Keys lie in their murmur2 partition, as the
 * listener checks.
 */
import { connect, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { encodeBatch } from '../shared/batch-codec.js';
import {
  ApiKey,
  decodeResponse,
  encodeRequest,
  KafkaFrameSplitter,
} from '../shared/kafka/index.js';
import { partitionFor } from '../shared/partitioner.js';
import { type MeasuredWindow, measureWindow, type Window } from './kafka-load-window.js';
import { LatencyHistogram } from './latency-histogram.js';
import type { RunningProcess } from './processes.js';

/** A stored document's size: what MB/s of values counts. */
export const VALUE_BYTES = 100;
const PRODUCE_VERSION = 9;
const PRODUCE_TIMEOUT_MS = 30_000;
const CLIENT_ID = 'tailbase-bench-pre-encoded';

/** A JSON document of exactly VALUE_BYTES bytes. */
export function valueText(seed: number): string {
  const prefix = `{"n":${seed},"pad":"`;
  const suffix = '"}';
  return prefix + 'x'.repeat(VALUE_BYTES - prefix.length - suffix.length) + suffix;
}

/** `count` distinct keys whose murmur2 partition of `partitions` is `partition`, named after `tag`. */
export function* keysOf(
  tag: string,
  partition: number,
  count: number,
  partitions: number,
): Generator<string> {
  let found = 0;
  for (let n = 0; found < count; n++) {
    const key = `${tag}-k${n}`;
    if (partitionFor(key, partitions) !== partition) continue;
    found++;
    yield key;
  }
}

/** One RecordBatch of `count` documents, keys of `partition` named after `tag`. */
export function encodePartitionBatch(
  tag: string,
  partition: number,
  count: number,
  partitions: number,
): Buffer {
  const now = Date.now();
  return encodeBatch(
    Array.from(keysOf(tag, partition, count, partitions), (key, i) => ({
      key,
      value: Buffer.from(valueText(i)),
      timestampMs: now,
    })),
  );
}

/** What one connection re-sends: one batch of `recordCount` records into `partition`. */
export interface PreEncodedBatch {
  partition: number;
  batch: Buffer;
  recordCount: number;
}

export interface PreEncodedProduceRun extends MeasuredWindow {
  /** Records acknowledged inside the measured window. */
  records: number;
  /** Answers with an error code inside the measured window. */
  errors: number;
  /** One sample a request inside the window: send to answer. */
  latency: LatencyHistogram;
  /** Records acknowledged over warm-up, window and the answers awaited after it. */
  recordsAckedAll: number;
}

function encodeProduce(topic: string, { partition, batch }: PreEncodedBatch): Buffer {
  return encodeRequest(ApiKey.Produce, PRODUCE_VERSION, 0, CLIENT_ID, {
    acks: -1,
    timeoutMs: PRODUCE_TIMEOUT_MS,
    topicData: [{ name: topic, partitionData: [{ index: partition, records: batch }] }],
  });
}

function openSocket(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port }, () => {
      socket.off('error', reject);
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

/**
 * One connection a batch, each re-sending its request and awaiting the answer, warmed up for
 * warmupS and measured for measureS (bench/kafka-load-window.ts); answers once every connection
 * has had its last answer, so `recordsAckedAll` is all the log was asked to hold.
 */
export async function producePreEncoded(
  node: RunningProcess,
  kafkaPort: number,
  topic: string,
  batches: readonly PreEncodedBatch[],
  warmupS: number,
  measureS: number,
): Promise<PreEncodedProduceRun> {
  const requests = batches.map((b) => encodeProduce(topic, b));
  const sockets: Socket[] = [];
  const window: Window = { recording: false, stop: false };
  let records = 0;
  let errors = 0;
  let recordsAckedAll = 0;
  const latency = new LatencyHistogram();
  const loop = (socket: Socket, request: Buffer, recordCount: number) =>
    new Promise<void>((resolve, reject) => {
      const splitter = new KafkaFrameSplitter();
      let correlationId = 0;
      let sent = 0;
      const send = () => {
        if (window.stop) return resolve();
        correlationId += 1;
        // The correlation id follows the size, api key and version: bytes 8..11 of the frame.
        request.writeInt32BE(correlationId, 8);
        sent = performance.now();
        socket.write(request);
      };
      socket.on('data', (chunk: Buffer) => {
        for (const frame of splitter.push(chunk)) {
          const answer = decodeResponse(ApiKey.Produce, PRODUCE_VERSION, frame);
          const failed = answer.body.responses.some((t) =>
            t.partitionResponses.some((p) => p.errorCode !== 0),
          );
          if (!failed) recordsAckedAll += recordCount;
          if (window.recording) {
            if (failed) errors += 1;
            else {
              records += recordCount;
              latency.recordMs(performance.now() - sent);
            }
          }
          send();
        }
      });
      socket.once('error', reject);
      socket.once('close', () => {
        if (!window.stop) reject(new Error('the Kafka listener closed a produce connection'));
      });
      send();
    });
  try {
    for (let i = 0; i < requests.length; i++) sockets.push(await openSocket(kafkaPort));
    const loops = sockets.map((socket, i) => loop(socket, requests[i], batches[i].recordCount));
    const measured = await measureWindow(node, warmupS, measureS, window);
    await Promise.all(loops);
    return { records, errors, latency, recordsAckedAll, ...measured };
  } finally {
    window.stop = true;
    for (const socket of sockets) socket.destroy();
  }
}
