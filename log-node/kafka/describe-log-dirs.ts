/**
 * DescribeLogDirs: the bytes of each partition this log-node stores, in one log directory (its
 * data dir), as Kafka's brokers answer for their own replicas: a client asks every broker that
 * leads a partition. Each size is the partition's segment files (Kafka's PartitionSize: the
 * record batches, not the offset indexes). Version 4's TotalBytes and UsableBytes are the data
 * dir's file system, -1 when the listener was given no directory or the file system cannot say.
 * Topics asked for that the node does not store are left out of the answer, as Kafka leaves them.
 */
import { statfs } from 'node:fs/promises';
import { ApiKey, ErrorCode, type RequestBody } from '../../shared/kafka/index.js';
import type { PartitionBytes } from '../../shared/log-api.js';
import type { KafkaHandler, KafkaRequestContext } from './handler.js';
import { byTopic, type HandlerDeps } from './handler-deps.js';

type DescribeLogDirsRequest = RequestBody<typeof ApiKey.DescribeLogDirs>;

const UNKNOWN_BYTES = -1n;

export function describeLogDirsHandler({ log, logDir }: HandlerDeps): KafkaHandler {
  return async (body: DescribeLogDirsRequest, context: KafkaRequestContext) => {
    if (!context.may('read')) {
      return { throttleTimeMs: 0, errorCode: ErrorCode.CLUSTER_AUTHORIZATION_FAILED, results: [] };
    }
    const wanted = wantedPartitions(body.topics);
    const stored = (await log.diskBytes()).filter(
      (entry): entry is PartitionBytes & { bytes: number } =>
        entry.bytes !== null &&
        (wanted === null || wanted.has(`${entry.topic}/${entry.partition}`)),
    );
    const topics = byTopic(stored.map((entry) => ({ topic: entry.topic, item: entry })));
    const { totalBytes, usableBytes } = await fileSystemBytes(logDir);
    return {
      throttleTimeMs: 0,
      errorCode: ErrorCode.NONE,
      results: [
        {
          errorCode: ErrorCode.NONE,
          logDir: logDir ?? '',
          topics: [...topics].map(([name, partitions]) => ({
            name,
            partitions: partitions.map((entry) => ({
              partitionIndex: entry.partition,
              partitionSize: BigInt(entry.bytes),
              offsetLag: 0n,
              isFutureKey: false,
            })),
          })),
          totalBytes,
          usableBytes,
        },
      ],
    };
  };
}

/** `topic/partition` of each partition asked for; null (every one) when Topics is null. */
function wantedPartitions(topics: DescribeLogDirsRequest['topics']): Set<string> | null {
  if (topics === null) return null;
  return new Set(
    topics.flatMap(({ topic, partitions }) =>
      partitions.map((partition) => `${topic}/${partition}`),
    ),
  );
}

async function fileSystemBytes(
  dir: string | null,
): Promise<{ totalBytes: bigint; usableBytes: bigint }> {
  if (dir === null) return { totalBytes: UNKNOWN_BYTES, usableBytes: UNKNOWN_BYTES };
  try {
    const stats = await statfs(dir, { bigint: true });
    return { totalBytes: stats.blocks * stats.bsize, usableBytes: stats.bavail * stats.bsize };
  } catch {
    return { totalBytes: UNKNOWN_BYTES, usableBytes: UNKNOWN_BYTES };
  }
}
