/**
 * Fetch: the stored batches of the partitions asked for, long-polled through the log's own
 * multi-partition fetch until minBytes have come or maxWaitMs (at most fetchWaitMsMax) has passed,
 * within maxBytes and partitionMaxBytes (at most fetchBytesMax each). The answer is filled from
 * the partitions in the order asked, each read only while the answer has room, and the log's read
 * buffers go back to it once the answer is written. Fetch sessions (KIP-227) are not kept: every
 * answer has sessionId 0, which tells clients to send full fetches.
 */
import { BATCH_HEADER_BYTES, batchLastOffsetAt, batchSizeAt } from '../../shared/batch-codec.js';
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
  /** The log has answered for it at least once (its offsets, or its error). */
  read: boolean;
}

export function fetchHandler({ log, config }: HandlerDeps): KafkaHandler {
  return async (body: FetchRequest, context: KafkaRequestContext) => {
    const deadlineMs = Date.now() + clamp(body.maxWaitMs, 0, config.fetchWaitMsMax);
    const answer: Answer = {
      bytesMax: clamp(body.maxBytes, 1, config.fetchBytesMax),
      bytes: 0,
      reads: [],
    };
    const minBytes = clamp(body.minBytes, 0, answer.bytesMax);
    const partitions = positionsOf(body, config.fetchBytesMax);
    if (!context.may('read')) {
      for (const entry of partitions) settle(entry, ErrorCode.TOPIC_AUTHORIZATION_FAILED);
    }
    // Every buffer read goes back to the log once the answer has left, whether it is in it or not.
    context.onWritten(() => {
      for (const read of answer.reads) log.giveBack?.(read);
    });
    const round = (entries: PartitionFetch[], waitMs: number) =>
      readRound(log, answer, entries, waitMs, context.signal);
    await fill(partitions, answer, minBytes, deadlineMs, round);
    // A partition the answer had no room for still says where its log is, as Kafka's answer
    // does: one batch of each is read for it, and none taken.
    const unread = partitions.filter((entry) => !entry.read && entry.errorCode === ErrorCode.NONE);
    if (unread.length > 0) await round(unread, 0);
    return answerOf(partitions);
  };
}

type Round = (entries: PartitionFetch[], waitMs: number) => Promise<number | null>;

/**
 * Passes over every open partition without waiting, in the order asked, as many at a time as
 * the answer has room for (a partition past the room is not read only to be dropped), until
 * minBytes have come; long-polls only when a whole pass found nothing.
 */
async function fill(
  partitions: readonly PartitionFetch[],
  answer: Answer,
  minBytes: number,
  deadlineMs: number,
  round: Round,
): Promise<void> {
  for (;;) {
    const open = partitions.filter((entry) => !entry.settled);
    if (open.length === 0 || answer.bytes >= answer.bytesMax) return;
    let passBytes = 0;
    for (let next = 0; next < open.length && answer.bytes < answer.bytesMax;) {
      const slice = sliceFor(open, next, answer.bytesMax - answer.bytes);
      next += slice.length;
      const read = await round(slice, 0);
      if (read === null) return;
      passBytes += read;
    }
    if (answer.bytes >= minBytes || Date.now() >= deadlineMs) return;
    // A partition's error is news the client must act on: Kafka answers a long poll with it at
    // once rather than keep it waiting for the other partitions' records.
    if (open.some((entry) => entry.errorCode !== ErrorCode.NONE)) return;
    if (passBytes > 0) continue;
    // Nothing anywhere: wait for an append to any open partition, or the deadline.
    const waited = await round(
      open.filter((entry) => !entry.settled),
      Math.max(0, deadlineMs - Date.now()),
    );
    if (waited === null || waited === 0) return;
    if (answer.bytes >= minBytes || Date.now() >= deadlineMs) return;
  }
}

/** What the answer holds so far, and every buffer the log filled for it. */
interface Answer {
  bytesMax: number;
  bytes: number;
  reads: Buffer[];
}

/**
 * The open partitions from `from` on that the answer's room can take, each counted at its own
 * room (its partitionMaxBytes left): at least one.
 */
function sliceFor(open: readonly PartitionFetch[], from: number, roomBytes: number) {
  let to = from;
  let bytes = 0;
  while (to < open.length && (to === from || bytes < roomBytes)) {
    bytes += Math.min(open[to].bytesMax - open[to].bytes, roomBytes);
    to += 1;
  }
  return open.slice(from, to);
}

/**
 * One fetch of the log for `entries`, its batches added to the answer within each partition's
 * room and the answer's. Returns the bytes added, or null when the log failed the whole fetch
 * (every entry asked is settled with its error).
 */
async function readRound(
  log: HandlerDeps['log'],
  answer: Answer,
  entries: readonly PartitionFetch[],
  waitMs: number,
  signal: AbortSignal,
): ReturnType<Round> {
  let outcomes: FetchOutcome[];
  try {
    outcomes = await log.fetch(
      entries.map(({ topic, partition, offset }) => ({ topic, partition, offset })),
      {
        maxBytes: Math.max(
          1,
          Math.min(
            answer.bytesMax - answer.bytes,
            Math.max(...entries.map((entry) => entry.bytesMax - entry.bytes)),
          ),
        ),
        waitMs,
        signal,
      },
    );
  } catch (error) {
    if (signal.aborted) throw error;
    for (const entry of entries) settle(entry, kafkaErrorCode(error));
    return null;
  }
  const before = answer.bytes;
  outcomes.forEach((outcome, i) => {
    const entry = entries[i];
    entry.read = true;
    if ('error' in outcome) {
      settle(entry, kafkaErrorCode(outcome.error));
      offsetsFromError(entry, outcome.error);
      return;
    }
    if (outcome.batches.length > 0) answer.reads.push(outcome.batches);
    entry.highWatermark = outcome.endOffset;
    entry.logStartOffset = outcome.logStartOffset;
    const room = Math.min(entry.bytesMax - entry.bytes, answer.bytesMax - answer.bytes);
    const taken = takeBatches(outcome.batches, room, answer.bytes === 0);
    if (taken.bytes.length > 0) {
      entry.chunks.push(taken.bytes);
      entry.bytes += taken.bytes.length;
      entry.offset = taken.nextOffset;
      answer.bytes += taken.bytes.length;
    }
    if (taken.bytes.length < outcome.batches.length || entry.bytes >= entry.bytesMax) {
      entry.settled = true;
    }
  });
  return answer.bytes - before;
}

function answerOf(partitions: readonly PartitionFetch[]) {
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
        read: false,
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
  while (at + BATCH_HEADER_BYTES <= batches.length) {
    const size = batchSizeAt(batches, at);
    if (at + size > room && !(at === 0 && firstOfAnswer)) break;
    nextOffset = batchLastOffsetAt(batches, at) + 1;
    at += size;
  }
  return { bytes: batches.subarray(0, at), nextOffset };
}
