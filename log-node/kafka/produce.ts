/**
 * Produce: each partition's record batch appended to the log as it came (so Fetch later answers
 * with the same bytes), answered once durable whatever acks says, since the log acknowledges
 * nothing earlier. A partition carries exactly one batch, as Kafka requires since Produce v3, so
 * a partition's answer is all or nothing. A collection topic holds documents: each record needs a
 * key in its murmur2 partition (where tailbase reads that key; librdkafka's default partitioner
 * is another, `partitioner=murmur2_random` is Kafka's) and a value that is null (a tombstone) or
 * a JSON object; a header of view fencing (tailbase-epoch, tailbase-claim) only the view processor
 * sends. A record that is not fails its partition, naming it, before anything is written.
 * A topic that does not exist is created by the append (as Metadata creates it) unless the
 * listener's autoCreateTopics is off. A retried batch the log already holds is answered, as Kafka
 * answers it, with its original offsets and no error; the answer's errorMessage says it was a
 * duplicate (DUPLICATE_BATCH_MESSAGE), which tailbase's gateway checks and other clients ignore.
 */
import {
  type BatchLimits,
  checkRecordSpans,
  enforceHeaderLimits,
  inflatedTooLarge,
  type RecordSpan,
} from '../../shared/batch-codec.js';
import { DUPLICATE_BATCH_MESSAGE } from '../../shared/kafka-log/errors.js';
import type { LogClient } from '../../shared/log-api.js';
import { partitionOfKeyAt } from '../../shared/partitioner.js';
import { readVarint } from '../../shared/varint.js';
import { CLAIM_HEADER, EPOCH_HEADER } from '../../shared/view-epoch.js';
import { ApiKey, ErrorCode, type RequestBody } from '../../shared/kafka/index.js';
import { isCollectionTopic, isGatewayTopic, isInternalTopic } from '../../shared/topics.js';
import { kafkaErrorCode, kafkaErrorMessage } from './error-codes.js';
import {
  CloseConnection,
  NO_RESPONSE,
  type KafkaHandler,
  type KafkaRequestContext,
} from './handler.js';
import type { HandlerDeps } from './handler-deps.js';
import { isJsonObject } from './json-object.js';
import { ViewTopics } from './view-topics.js';

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

export function produceHandler({ log, logCreatingNothing, config }: HandlerDeps): KafkaHandler {
  const topics = new KnownTopics(log);
  const viewTopics = new ViewTopics(log);
  return async (body: ProduceRequest, context: KafkaRequestContext) => {
    const acksValid = ACKS.has(body.acks);
    const answers = await Promise.all(
      body.topicData.map(async ({ name, partitionData }) => ({
        name,
        partitionResponses: await Promise.all(
          partitionData.map(({ index, records }) =>
            !context.may('write')
              ? failed(
                  index,
                  ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                  'producing needs the write scope',
                )
              : acksValid
                ? producePartition(name, index, records, context)
                : failed(index, ErrorCode.INVALID_REQUIRED_ACKS, `acks must be -1, 0 or 1`),
          ),
        ),
      })),
    );
    if (body.acks === 0) {
      const error = answers
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
    return { responses: answers, throttleTimeMs: 0 };
  };

  async function producePartition(
    topic: string,
    index: number,
    records: Buffer | null,
    context: KafkaRequestContext,
  ): Promise<PartitionAnswer> {
    // The settings and views topics are a tailbase gateway's to write (the admin scope, as
    // creating a collection's topic); the consumer offsets are the group coordinator's alone.
    if (isInternalTopic(topic) && !(isGatewayTopic(topic) && context.may('admin'))) {
      return failed(
        index,
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        isGatewayTopic(topic)
          ? `${topic} is a tailbase gateway's topic: writing it needs the admin scope`
          : `${topic} is an internal topic: only tailbase writes it`,
      );
    }
    if (!isCollectionTopic(topic) && !isGatewayTopic(topic)) {
      return failed(
        index,
        ErrorCode.INVALID_TOPIC_EXCEPTION,
        `topic ${topic.slice(0, 80)} is not a collection name (^[a-z][a-z0-9_-]{0,63}$)`,
      );
    }
    const viewRefusal = context.viewWriter ? null : await viewTopics.refusal(topic);
    if (viewRefusal !== null) return failed(index, viewRefusal.errorCode, viewRefusal.message);
    // A view processor writes only topics that exist: one that has not yet seen its view dropped
    // (or its version retired) must not create the topic again as a collection. A topic known
    // once may have been deleted since: the append through `logCreatingNothing` then refuses it.
    const creates = config.autoCreateTopics && !context.viewWriter;
    const partitions = await topics.partitions(topic);
    if (partitions === null && !creates) {
      return failed(index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `topic ${topic} does not exist`);
    }
    const batch = oneBatch(records, config);
    if (!('batch' in batch)) return failed(index, batch.errorCode, batch.message);
    const refused = firstNonDocument(
      batch.plain,
      batch.records,
      index,
      partitions ?? (await topics.clusterPartitions()),
    );
    if (refused !== null && 'corrupt' in refused) {
      return failed(
        index,
        ErrorCode.CORRUPT_MESSAGE,
        `record batch is corrupt: ${refused.corrupt}`,
      );
    }
    const forged =
      refused ?? (context.viewWriter ? null : firstFenceHeader(batch.plain, batch.records));
    if (forged !== null) {
      return {
        ...failed(index, ErrorCode.INVALID_RECORD, forged.message),
        recordErrors: [{ batchIndex: forged.index, batchIndexErrorMessage: forged.message }],
      };
    }
    try {
      const writer = creates ? log : logCreatingNothing;
      const { baseOffset, duplicate } = await writer.append(topic, index, batch.batch);
      return {
        index,
        errorCode: ErrorCode.NONE,
        baseOffset,
        logAppendTimeMs: -1,
        logStartOffset: -1,
        recordErrors: [],
        errorMessage: duplicate ? DUPLICATE_BATCH_MESSAGE : null,
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

/** A refusal of the log's (a TailbaseError) as a partition's Kafka error. */
function refusal(error: unknown): { errorCode: number; message: string | null } {
  return { errorCode: kafkaErrorCode(error), message: kafkaErrorMessage(error) };
}

/**
 * A partition's records field as its one batch (stored as sent, compressed or not) with its
 * records plain (`plain`, where the spans lie: the inflated copy of a compressed batch), or the
 * error that refuses it.
 */
function oneBatch(
  records: Buffer | null,
  limits: BatchLimits,
):
  | { batch: Buffer; plain: Buffer; records: readonly RecordSpan[] }
  | { errorCode: number; message: string | null } {
  if (records === null || records.length === 0) {
    return { errorCode: ErrorCode.CORRUPT_MESSAGE, message: 'the partition carries no batch' };
  }
  let capBytes: number;
  try {
    ({ capBytes } = enforceHeaderLimits(records, limits));
  } catch (error) {
    return refusal(error);
  }
  const check = checkRecordSpans(records, capBytes);
  if (!check.ok && check.inflatedTooLarge) {
    return refusal(inflatedTooLarge(capBytes, limits, check.detail));
  }
  if (!check.ok) {
    return {
      errorCode: ErrorCode.CORRUPT_MESSAGE,
      message: `record batch is ${check.reason}: ${check.detail}`,
    };
  }
  if (check.header.sizeBytes !== records.length) {
    return {
      errorCode: ErrorCode.INVALID_RECORD,
      message: 'a partition carries one record batch (Produce v3 and later)',
    };
  }
  return { batch: records, plain: check.plain, records: check.records };
}

/**
 * The first record that is not a document of this partition (no key, a key another partition
 * holds, a value neither null nor a JSON object), or null; each read where it lies in the batch.
 */
function firstNonDocument(
  batch: Buffer,
  records: readonly RecordSpan[],
  partition: number,
  partitions: number,
): { index: number; message: string } | null {
  for (const [index, { keyAt, keyLength, valueAt, valueLength }] of records.entries()) {
    if (keyLength < 0) return { index, message: `record ${index}: a document needs a key` };
    const home = partitionOfKeyAt(batch, keyAt, keyAt + keyLength, partitions);
    if (home !== partition) {
      return {
        index,
        message: `record ${index}: its key belongs to partition ${home} (murmur2, Kafka's default partitioner; librdkafka: partitioner=murmur2_random)`,
      };
    }
    if (valueLength >= 0 && !isJsonObject(batch, valueAt, valueAt + valueLength)) {
      return {
        index,
        message: `record ${index}: the value is not a JSON object in UTF-8 (a document, or null to delete)`,
      };
    }
  }
  return null;
}

/**
 * The first record carrying a header of view fencing (shared/view-epoch.ts), or null. Whoever
 * applies a view's topic reads those headers as epochs and claims, so only the view processor may
 * write them: from any other client one would fence a partition's every later record.
 */
function firstFenceHeader(
  batch: Buffer,
  records: readonly RecordSpan[],
): { index: number; message: string } | null {
  for (const [index, { headersAt, headerCount }] of records.entries()) {
    let at = headersAt;
    for (let h = 0; h < headerCount; h++) {
      // checkRecordSpans has walked these headers: every varint is whole.
      const keyLength = readVarint(batch, at) as { value: number; next: number };
      const key = batch.subarray(keyLength.next, keyLength.next + keyLength.value);
      if (FENCE_HEADER_KEYS.some((fence) => fence.equals(key))) {
        return {
          index,
          message: `record ${index}: header ${key.toString()} is the view processor's to write`,
        };
      }
      const valueLength = readVarint(batch, keyLength.next + keyLength.value) as {
        value: number;
        next: number;
      };
      at = valueLength.next + Math.max(valueLength.value, 0);
    }
  }
  return null;
}

const FENCE_HEADER_KEYS = [EPOCH_HEADER, CLAIM_HEADER].map((key) => Buffer.from(key));

/**
 * The topics the log holds and their partition counts, asked of the log again for a name it has
 * not seen (a partition count never changes, so what is known of a topic stays true while it
 * exists; an append to one deleted since is refused by the log).
 */
class KnownTopics {
  private readonly known = new Map<string, number>();
  private cluster: Promise<number> | null = null;

  constructor(private readonly log: LogClient) {}

  /** The topic's partition count, or null when the log has no such topic. */
  async partitions(topic: string): Promise<number | null> {
    const known = this.known.get(topic);
    if (known !== undefined) return known;
    const infos = await this.log.topics();
    for (const info of infos) this.known.set(info.name, info.partitions);
    return this.known.get(topic) ?? null;
  }

  /** The partition count a new collection topic gets. */
  clusterPartitions(): Promise<number> {
    this.cluster ??= this.log.cluster().then((info) => info.partitions);
    return this.cluster;
  }
}
