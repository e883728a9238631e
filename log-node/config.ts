/**
 * The log-node's configuration: every size, count and wait is named here with its unit, has a
 * default, and is enforced where it is used.
 */
import { PARTITIONS_MAX } from '../shared/log-api.js';
import { BATCH_INFLATED_BYTES_MAX_DEFAULT } from '../shared/batch-compression.js';
import { type FileIO, nodeFileIO } from '../shared/file-io.js';
import type { CleanupPolicy } from '../shared/topics.js';

export type FsyncPolicy = 'always' | 'interval';
export type { CleanupPolicy };

export interface LogNodeConfig {
  dataDir: string;
  /**
   * Every file the node writes goes through this: node:fs, or in tests a disk that loses unsynced
   * writes at a power cut or fails its fsync (shared/file-io.ts). In-process only, not a flag.
   */
  fileIO: FileIO;
  host: string;
  port: number;
  partitions: number;
  nodeId?: string;
  /** Every log-node of a cluster shares it; a lone node makes one when it creates its data. */
  clusterId?: string;
  /**
   * The partitions this node stores, when a cluster spreads them over several log-nodes (until
   * replication puts each on several); all of them by default.
   */
  hostedPartitions?: number[];
  /** Shared by every node of a cluster; when set, internal calls must carry it. */
  clusterSecret?: string;
  /** `always`: ack after fdatasync. `interval`: ack after write, fsync every fsyncIntervalMs. */
  fsync: FsyncPolicy;
  fsyncIntervalMs: number;
  segmentBytesMax: number;
  segmentMsMax: number;
  /** A sparse index entry every this many bytes of log. */
  indexIntervalBytes: number;
  batchBytesMax: number;
  recordBytesMax: number;
  recordsPerBatchMax: number;
  /** Bytes a compressed batch's records may inflate to: a larger one is refused (413). */
  batchInflatedBytesMax: number;
  /** Partitions of a topic, and topic-partitions of one multi-partition append or fetch. */
  partitionsMax: number;
  /** Bytes of batches a read answers with at most (at least one whole batch is always sent). */
  readBytesMax: number;
  longPollsMax: number;
  longPollWaitMsMax: number;
  /** Bytes waiting for the next group commit of a partition before appends get 503. */
  /**
   * Bytes of each partition's newest durable batches kept in memory, so reads at the end of the
   * log need no file read (tail-cache.ts); 0 turns it off.
   */
  tailCacheBytesMax: number;
  /**
   * Bytes of read buffers kept between file reads, for every partition together
   * (read-buffers.ts); 0 allocates each read's anew.
   */
  readBuffersIdleBytesMax: number;
  appendQueueBytesMax: number;
  /**
   * The defaults of a collection topic's configs (shared/topics.ts; internal topics are always
   * compacted): each topic keeps its own in its topic.json.
   */
  cleanupPolicy: CleanupPolicy;
  /** Closed segments whose newest record is older than this are deleted (delete policy). */
  retentionMs: number;
  /** Oldest closed segments are deleted while a partition exceeds this (delete policy). */
  retentionBytes: number;
  /**
   * Tombstones are kept this long from their timestamp, and always through the compaction pass that
   * first sees them, so consumers that were behind still see the delete.
   */
  deleteRetentionMs: number;
  cleanerIntervalMs: number;
  /**
   * Keys in one pass's key map: a pass whose dirty part holds more cleans up to where the map
   * filled and moves the partition's cleaned-through point only that far.
   */
  cleanerKeysMax: number;
  /**
   * Kafka's min.cleanable.dirty.ratio: a compacted partition is cleaned once the bytes of its
   * closed segments past its cleaned-through point are at least this share of its closed bytes.
   */
  cleanerMinDirtyRatio: number;
  /**
   * The longest the cleaner reads, decodes or copies batches before it gives the log-node's
   * thread back to appends and reads: a pass over a partition of several GB takes seconds to
   * minutes, and appends waited for all of it (the 10^7 scale run's 503s).
   */
  cleanerSliceMsMax: number;
  /** Producers silent for this long are forgotten (their next batch must start at sequence 0). */
  producerExpiryMs: number;
  /** Recent batches remembered per producer to answer retries with their original offsets. */
  producerRecentBatchesMax: number;
  /**
   * A partition stores its recovery point (recovery-point.ts) at most this often under load: the
   * acknowledged bytes of the last interval are what recovery cannot tell from a torn write.
   */
  recoveryPointIntervalMs: number;
}

const MiB = 1024 * 1024;
const DAY_MS = 24 * 60 * 60 * 1000;

export const logNodeDefaults: Omit<LogNodeConfig, 'dataDir'> = {
  fileIO: nodeFileIO,
  host: '127.0.0.1',
  port: 7070,
  partitions: 8,
  fsync: 'always',
  fsyncIntervalMs: 50,
  segmentBytesMax: 128 * MiB,
  segmentMsMax: 7 * DAY_MS,
  indexIntervalBytes: 4096,
  batchBytesMax: 16 * MiB + 64 * 1024,
  recordBytesMax: MiB + 2048,
  recordsPerBatchMax: 10_000,
  batchInflatedBytesMax: BATCH_INFLATED_BYTES_MAX_DEFAULT,
  partitionsMax: PARTITIONS_MAX,
  readBytesMax: 4 * MiB,
  longPollsMax: 1024,
  longPollWaitMsMax: 30_000,
  appendQueueBytesMax: 256 * MiB,
  tailCacheBytesMax: 1 * MiB,
  readBuffersIdleBytesMax: 64 * MiB,
  cleanupPolicy: 'compact',
  retentionMs: -1,
  retentionBytes: -1,
  deleteRetentionMs: DAY_MS,
  cleanerIntervalMs: 15_000,
  cleanerKeysMax: 2_000_000,
  cleanerMinDirtyRatio: 0.5,
  cleanerSliceMsMax: 5,
  producerExpiryMs: 7 * DAY_MS,
  producerRecentBatchesMax: 5,
  recoveryPointIntervalMs: 100,
};

export function logNodeConfig(
  options: Partial<LogNodeConfig> & Pick<LogNodeConfig, 'dataDir'>,
): LogNodeConfig {
  const defined = Object.fromEntries(
    Object.entries(options).filter(([, value]) => value !== undefined),
  ) as Partial<LogNodeConfig>;
  const config = { ...logNodeDefaults, ...defined } as LogNodeConfig;
  if (!Number.isInteger(config.partitions) || config.partitions < 1) {
    throw new Error(`partitions must be a positive integer, got ${config.partitions}`);
  }
  if (config.partitions > config.partitionsMax) {
    throw new Error(
      `partitions ${config.partitions} exceeds partitionsMax ${config.partitionsMax}`,
    );
  }
  if (config.segmentBytesMax < config.batchBytesMax) {
    throw new Error('segmentBytesMax must be at least batchBytesMax');
  }
  if (config.segmentBytesMax > 2 ** 31 - 1) {
    throw new Error("segmentBytesMax must fit the index's 32-bit positions");
  }
  return config;
}
