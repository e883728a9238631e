/**
 * Fetch: the stored batches of the partitions asked for, long-polled through the log's own
 * multi-partition fetch until minBytes have come or maxWaitMs (at most fetchWaitMsMax) has passed,
 * within maxBytes and partitionMaxBytes (at most fetchBytesMax each). Fetch sessions (KIP-227)
 * are not kept: every answer has sessionId 0, which tells clients to send full fetches.
 */
import { readBatchHeader } from '../../shared/batch-codec.js';
import { TailbaseError } from '../../shared/errors.js';
import type { FetchOutcome } from '../../shared/fetch-answer.js';
import { ApiKey, ErrorCode, type RequestBody } from '../../shared/kafka/index.js';
import { isKnownTopicName } from '../../shared/topics.js';
import { kafkaErrorCode } from './error-codes.js';
import type { KafkaHandler, KafkaRequestContext } from './handler.js';
import { byTopic, clamp, type HandlerDeps } from './handler-deps.js';

type FetchRequest = RequestBody<typeof ApiKey.Fetch>;

interface PartitionFetch {
  topic: string;
  partition: number;
  /** The next offset to read: the fetch offset, then past what earlier rounds returned. */
  offset: number;
  bytesMax: number;
  errorCode: number;
  chunks: Buffer[];
  bytes: number;
  highWatermark: number;
  logStartOffset: number;
  /** No more rounds for it: an error, or its bytes are used up. */
  settled: boolean;
}

export function fetchHandler({ log, config }: HandlerDeps): KafkaHandler {
  return async (body: FetchRequest, context: KafkaRequestContext) => {
    const deadlineMs = Date.now() + clamp(body.maxWaitMs, 0, config.fetchWaitMsMax);
    const responseBytesMax = clamp(body.maxBytes, 1, config.fetchBytesMax);
    const minBytes = clamp(body.minBytes, 0, responseBytesMax);
    const partitions = positionsOf(body, config.fetchBytesMax);
    if (!context.may('read')) {
      for (const entry of partitions) settle(entry, ErrorCode.TOPIC_AUTHORIZATION_FAILED);
    }
    let total = 0;
    for (;;) {
      const active = partitions.filter((entry) => !entry.settled);
      if (active.length === 0) break;
      const waitMs = Math.max(0, deadlineMs - Date.now());
      let outcomes: FetchOutcome[];
      try {
        outcomes = await log.fetch(
          active.map(({ topic, partition, offset }) => ({ topic, partition, offset })),
          {
            maxBytes: Math.max(...active.map((entry) => entry.bytesMax - entry.bytes)),
            waitMs,
            signal: context.signal,
          },
        );
      } catch (error) {
        if (context.signal.aborted) throw error;
        for (const entry of active) settle(entry, kafkaErrorCode(error));
        break;
      }
      let roundBytes = 0;
      outcomes.forEach((outcome, i) => {
        const entry = active[i];
        if ('error' in outcome) {
          settle(entry, kafkaErrorCode(outcome.error));
          offsetsFromError(entry, outcome.error);
          return;
        }
        entry.highWatermark = outcome.endOffset;
        entry.logStartOffset = outcome.logStartOffset;
        const room = Math.min(entry.bytesMax - entry.bytes, responseBytesMax - total - roundBytes);
        const taken = takeBatches(outcome.batches, room, total + roundBytes === 0);
        if (taken.bytes.length > 0) {
          entry.chunks.push(taken.bytes);
          entry.bytes += taken.bytes.length;
          entry.offset = taken.nextOffset;
          roundBytes += taken.bytes.length;
        }
        if (taken.bytes.length < outcome.batches.length || entry.bytes >= entry.bytesMax) {
          entry.settled = true;
        }
      });
      total += roundBytes;
      const done =
        total >= minBytes ||
        total >= responseBytesMax ||
        Date.now() >= deadlineMs ||
        // The log waited the whole time left and nothing came.
        (roundBytes === 0 && waitMs > 0);
      if (done) break;
    }
    return {
      throttleTimeMs: 0,
      errorCode: ErrorCode.NONE,
      sessionId: 0,
      responses: [...byTopic(partitions.map((entry) => ({ topic: entry.topic, item: entry })))].map(
        ([topic, entries]) => ({
          topic,
          partitions: entries.map((entry) => ({
            partitionIndex: entry.partition,
            errorCode: entry.errorCode,
            highWatermark: entry.highWatermark,
            lastStableOffset: entry.highWatermark,
            logStartOffset: entry.logStartOffset,
            abortedTransactions: null,
            preferredReadReplica: -1,
            records: entry.chunks.length === 1 ? entry.chunks[0] : Buffer.concat(entry.chunks),
          })),
        }),
      ),
    };
  };
}

function positionsOf(body: FetchRequest, fetchBytesMax: number): PartitionFetch[] {
  const seen = new Set<string>();
  return body.topics.flatMap(({ topic, partitions }) =>
    partitions.map((asked): PartitionFetch => {
      const entry: PartitionFetch = {
        topic,
        partition: asked.partition,
        offset: Number(asked.fetchOffset),
        bytesMax: clamp(asked.partitionMaxBytes, 1, fetchBytesMax),
        errorCode: ErrorCode.NONE,
        chunks: [],
        bytes: 0,
        highWatermark: -1,
        logStartOffset: -1,
        settled: false,
      };
      const key = `${topic}\0${asked.partition}`;
      if (!isKnownTopicName(topic)) settle(entry, ErrorCode.INVALID_TOPIC_EXCEPTION);
      else if (seen.has(key)) settle(entry, ErrorCode.INVALID_REQUEST);
      else if (asked.partition < 0) settle(entry, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
      else if (entry.offset < 0) settle(entry, ErrorCode.OFFSET_OUT_OF_RANGE);
      seen.add(key);
      return entry;
    }),
  );
}

function settle(entry: PartitionFetch, errorCode: number): void {
  entry.errorCode = errorCode;
  entry.settled = true;
}

/** An out-of-range answer still says where the log is, so the client can reset to it. */
function offsetsFromError(entry: PartitionFetch, error: TailbaseError): void {
  const { logStartOffset, endOffset } = error.details;
  if (typeof logStartOffset === 'number') entry.logStartOffset = logStartOffset;
  if (typeof endOffset === 'number') entry.highWatermark = endOffset;
}

/**
 * Whole batches from the front of `batches` within `room` bytes; the first batch even past it
 * when nothing is in the answer yet, so a batch larger than maxBytes never stalls a consumer (as
 * Kafka does since KIP-74).
 */
function takeBatches(
  batches: Buffer,
  room: number,
  firstOfAnswer: boolean,
): { bytes: Buffer; nextOffset: number } {
  let at = 0;
  let nextOffset = -1;
  while (at < batches.length) {
    const header = readBatchHeader(batches, at);
    if (header === null) break;
    if (at + header.sizeBytes > room && !(at === 0 && firstOfAnswer)) break;
    at += header.sizeBytes;
    nextOffset = header.baseOffset + header.lastOffsetDelta + 1;
  }
  return { bytes: batches.subarray(0, at), nextOffset };
}
