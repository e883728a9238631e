/**
 * ListOffsets: a partition's latest (−1) or earliest (−2) offset, or the first offset whose
 * record timestamp is at or after a time. The log keeps no time index, so a time is found by
 * reading batches from the log start, skipping each whose max timestamp is earlier; the bytes read
 * per request are bounded by listOffsetsScanBytesMax.
 */
import { decodeRawRecords, iterateBatches } from '../../shared/batch-codec.js';
import type { PartitionOffsets } from '../../shared/log-api.js';
import { ApiKey, ErrorCode, type RequestBody } from '../../shared/kafka/index.js';
import { isKnownTopicName } from '../../shared/topics.js';
import { kafkaErrorCode } from './error-codes.js';
import type { KafkaHandler, KafkaRequestContext } from './handler.js';
import type { HandlerDeps } from './handler-deps.js';

type ListOffsetsRequest = RequestBody<typeof ApiKey.ListOffsets>;

const LATEST_TIMESTAMP = -1;
const EARLIEST_TIMESTAMP = -2;

interface Found {
  errorCode: number;
  timestamp: number;
  offset: number;
}

class ScanBoundReached extends Error {}

export function listOffsetsHandler({ log, config, logger }: HandlerDeps): KafkaHandler {
  return async (body: ListOffsetsRequest, context: KafkaRequestContext) => {
    const [stored, topicList, { hostedPartitions }] = await Promise.all([
      log.offsets(),
      log.topics(),
      log.cluster(),
    ]);
    const offsets = new Map(stored.map((entry) => [`${entry.topic}\0${entry.partition}`, entry]));
    const partitionCounts = new Map(topicList.map((topic) => [topic.name, topic.partitions]));
    const budget = { bytesLeft: config.listOffsetsScanBytesMax };
    const topics = [];
    for (const { name, partitions } of body.topics) {
      const answers = [];
      for (const { partitionIndex, timestamp } of partitions) {
        const found = await find(
          name,
          partitionIndex,
          offsets.get(`${name}\0${partitionIndex}`),
          Number(timestamp),
        );
        answers.push({ partitionIndex, leaderEpoch: -1, ...found });
      }
      topics.push({ name, partitions: answers });
    }
    return { throttleTimeMs: 0, topics };

    async function find(
      topic: string,
      partitionIndex: number,
      partition: PartitionOffsets | undefined,
      timestamp: number,
    ): Promise<Found> {
      const error = (errorCode: number) => ({ errorCode, timestamp: -1, offset: -1 });
      if (!context.may('read')) return error(ErrorCode.TOPIC_AUTHORIZATION_FAILED);
      if (partition === undefined) {
        if (!isKnownTopicName(topic)) return error(ErrorCode.INVALID_TOPIC_EXCEPTION);
        if (partitionIndex >= (partitionCounts.get(topic) ?? 0)) {
          return error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
        }
        // Stored here but left out of the log's offsets: it failed (a damaged segment, a failed
        // write). Kafka answers a partition on a failed log dir so, and clients keep using the
        // others; NOT_LEADER_OR_FOLLOWER would send them refreshing metadata that names this node.
        if (hostedPartitions.includes(partitionIndex)) return error(ErrorCode.KAFKA_STORAGE_ERROR);
        // A partition of the topic that another log-node stores: the client asks its leader.
        return error(ErrorCode.NOT_LEADER_OR_FOLLOWER);
      }
      if (timestamp === LATEST_TIMESTAMP) return { ...error(0), offset: partition.endOffset };
      if (timestamp === EARLIEST_TIMESTAMP) {
        return { ...error(0), offset: partition.logStartOffset };
      }
      if (timestamp < 0) return error(ErrorCode.INVALID_REQUEST);
      try {
        return { errorCode: ErrorCode.NONE, ...(await scan(partition, timestamp)) };
      } catch (failure) {
        if (!(failure instanceof ScanBoundReached)) return error(kafkaErrorCode(failure));
        logger.warn(
          { topic, partition: partition.partition, timestamp, limit: 'listOffsetsScanBytesMax' },
          'ListOffsets by timestamp read listOffsetsScanBytesMax bytes without an answer',
        );
        return error(ErrorCode.UNKNOWN_SERVER_ERROR);
      }
    }

    async function scan(
      { topic, partition, logStartOffset, endOffset }: PartitionOffsets,
      timestamp: number,
    ): Promise<{ timestamp: number; offset: number }> {
      let offset = logStartOffset;
      while (offset < endOffset) {
        if (budget.bytesLeft <= 0) throw new ScanBoundReached();
        const read = await log.read(topic, partition, offset, {
          maxBytes: Math.min(config.fetchBytesMax, budget.bytesLeft),
        });
        if (read.batches.length === 0) break;
        budget.bytesLeft -= read.batches.length;
        for (const { header, bytes } of iterateBatches(read.batches)) {
          const lastOffset = header.baseOffset + header.lastOffsetDelta;
          if (lastOffset < offset) continue;
          if (header.maxTimestampMs >= timestamp) {
            const record = decodeRawRecords(bytes).find(
              (candidate) => candidate.offset >= offset && candidate.timestampMs >= timestamp,
            );
            if (record) return { timestamp: record.timestampMs, offset: record.offset };
          }
          offset = lastOffset + 1;
        }
      }
      return { timestamp: -1, offset: -1 };
    }
  };
}
