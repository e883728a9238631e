/**
 * Produce: each partition's record batches appended to the log as they came (so Fetch later
 * answers with the same bytes), answered once durable whatever acks says, since the log
 * acknowledges nothing earlier. A collection topic holds documents, so each record value must be
 * null (a tombstone) or a JSON object; one that is not fails its whole partition, naming the
 * record, before anything of it is written.
 */
import {
  BATCH_MAGIC,
  checkBatch,
  COMPRESSION_MASK,
  decodeRawRecords,
  readBatchHeader,
} from '../../shared/batch-codec.js';
import type { AppendResult } from '../../shared/log-api.js';
import { ApiKey, ErrorCode, type RequestBody } from '../../shared/kafka/index.js';
import { isCollectionTopic, isInternalTopic } from '../../shared/topics.js';
import { kafkaErrorCode, kafkaErrorMessage } from './error-codes.js';
import { CloseConnection, NO_RESPONSE, type KafkaHandler } from './handler.js';
import type { HandlerDeps } from './handler-deps.js';

type ProduceRequest = RequestBody<typeof ApiKey.Produce>;

interface PartitionAnswer {
  index: number;
  errorCode: number;
  baseOffset: number;
  logAppendTimeMs: number;
  logStartOffset: number;
  recordErrors: { batchIndex: number; batchIndexErrorMessage: string | null }[];
  errorMessage: string | null;
}

const ACKS = new Set([-1, 0, 1]);
const utf8Strict = new TextDecoder('utf-8', { fatal: true });

export function produceHandler({ log }: HandlerDeps): KafkaHandler {
  return async (body: ProduceRequest) => {
    const acksValid = ACKS.has(body.acks);
    const topics = await Promise.all(
      body.topicData.map(async ({ name, partitionData }) => ({
        name,
        partitionResponses: await Promise.all(
          partitionData.map(({ index, records }) =>
            acksValid
              ? producePartition(name, index, records)
              : failed(index, ErrorCode.INVALID_REQUIRED_ACKS, `acks must be -1, 0 or 1`),
          ),
        ),
      })),
    );
    if (body.acks === 0) {
      const error = topics
        .flatMap((topic) => topic.partitionResponses)
        .find((answer) => answer.errorCode !== ErrorCode.NONE);
      // Kafka's only way to tell an acks=0 producer that its write failed.
      if (error) {
        throw new CloseConnection(
          `acks=0 produce failed: ${error.errorMessage ?? error.errorCode}`,
        );
      }
      return NO_RESPONSE;
    }
    return { responses: topics, throttleTimeMs: 0 };
  };

  async function producePartition(
    topic: string,
    index: number,
    records: Buffer | null,
  ): Promise<PartitionAnswer> {
    if (isInternalTopic(topic)) {
      return failed(
        index,
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        `${topic} is an internal topic: only tailbase writes it`,
      );
    }
    if (!isCollectionTopic(topic)) {
      return failed(
        index,
        ErrorCode.INVALID_TOPIC_EXCEPTION,
        `topic ${topic.slice(0, 80)} is not a collection name (^[a-z][a-z0-9_-]{0,63}$)`,
      );
    }
    const batches = splitBatches(records);
    if (!Array.isArray(batches)) return failed(index, batches.errorCode, batches.message);
    for (const batch of batches) {
      const refused = firstNonDocument(batch);
      if (refused === 'corrupt') {
        return failed(index, ErrorCode.CORRUPT_MESSAGE, 'a record of the batch does not decode');
      }
      if (refused !== null) {
        return {
          ...failed(index, ErrorCode.INVALID_RECORD, refused.message),
          recordErrors: [{ batchIndex: refused.index, batchIndexErrorMessage: refused.message }],
        };
      }
    }
    try {
      let first: AppendResult | undefined;
      for (const batch of batches) {
        const appended = await log.append(topic, index, batch);
        first ??= appended;
      }
      return {
        index,
        errorCode: ErrorCode.NONE,
        baseOffset: first!.baseOffset,
        logAppendTimeMs: -1,
        logStartOffset: -1,
        recordErrors: [],
        errorMessage: null,
      };
    } catch (error) {
      return failed(index, kafkaErrorCode(error), kafkaErrorMessage(error));
    }
  }
}

function failed(index: number, errorCode: number, errorMessage: string | null): PartitionAnswer {
  return {
    index,
    errorCode,
    baseOffset: -1,
    logAppendTimeMs: -1,
    logStartOffset: -1,
    recordErrors: [],
    errorMessage,
  };
}

/** A partition's records field as whole batches, or the error that refuses it. */
function splitBatches(records: Buffer | null): Buffer[] | { errorCode: number; message: string } {
  if (records === null || records.length === 0) {
    return { errorCode: ErrorCode.CORRUPT_MESSAGE, message: 'the partition carries no batch' };
  }
  const batches: Buffer[] = [];
  for (let at = 0; at < records.length;) {
    // Compression is refused by name, before the check (which cannot read compressed records).
    const header = readBatchHeader(records, at);
    if (header !== null && header.magic === BATCH_MAGIC && header.attributes & COMPRESSION_MASK) {
      return {
        errorCode: ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
        message: `compression codec ${header.attributes & COMPRESSION_MASK}: tailbase stores uncompressed batches (compression.type=none)`,
      };
    }
    const check = checkBatch(records, at);
    if (!check.ok) {
      return {
        errorCode: ErrorCode.CORRUPT_MESSAGE,
        message: `record batch at byte ${at} is ${check.reason}: ${check.detail}`,
      };
    }
    batches.push(records.subarray(at, at + check.header.sizeBytes));
    at += check.header.sizeBytes;
  }
  return batches;
}

/**
 * The first record whose value is neither null nor a JSON object, 'corrupt' for records that do
 * not decode, or null.
 */
function firstNonDocument(batch: Buffer): { index: number; message: string } | 'corrupt' | null {
  let values: (Buffer | null)[];
  try {
    values = decodeRawRecords(batch).map((record) => record.value);
  } catch {
    return 'corrupt';
  }
  for (const [index, value] of values.entries()) {
    if (value === null) continue;
    let document: unknown;
    try {
      document = JSON.parse(utf8Strict.decode(value));
    } catch {
      return { index, message: `record ${index}: the value is not UTF-8 JSON` };
    }
    if (typeof document !== 'object' || document === null || Array.isArray(document)) {
      return { index, message: `record ${index}: a document is a JSON object (or null to delete)` };
    }
  }
  return null;
}
