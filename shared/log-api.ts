/**
 * The log's contract: what a gateway or serve-node asks of the log layer, whichever way it is
 * reached (by the Kafka protocol from another process, or bound in-process by `tailbase start`).
 * Implementations: shared/kafka-log/ (the Kafka protocol), log-node/local-log-client.ts
 * (in-process), shared/port-log-client.ts (the in-process binding across a worker thread).
 */
import type { FetchOutcome } from './fetch-answer.js';
import type { TopicConfigs, TopicInfo } from './topics.js';

export const CLUSTER_SECRET_HEADER = 'tailbase-cluster-secret';

export interface AppendResult {
  baseOffset: number;
  lastOffset: number;
  /** True when the (producerId, sequence) was already appended and these are its offsets. */
  duplicate: boolean;
}

/** A partition of one topic: the unit the log orders, offsets count and tokens name. */
export interface TopicPartition {
  topic: string;
  partition: number;
}

export interface PartitionOffsets extends TopicPartition {
  logStartOffset: number;
  endOffset: number;
}

/**
 * One topic-partition's bytes on disk: its segment files on the log-node that stores it (Kafka's
 * PartitionSize, which counts the record batches and not the offset indexes); on a replicated
 * Kafka cluster its leader's replica only, so a topic of replication factor 3 takes about three
 * times this across the brokers. Null when the log cannot say (a broker without DescribeLogDirs,
 * as librdkafka's mock cluster, or one that did not answer).
 */
export interface PartitionBytes extends TopicPartition {
  bytes: number | null;
}

export interface ReadResult {
  /** Whole batches as stored; the first may start before the requested offset. */
  batches: Buffer;
  logStartOffset: number;
  endOffset: number;
}

/** The batch limits a log-node enforces, so a writer can check its own against them. */
export interface LogLimits {
  batchBytesMax: number;
  recordBytesMax: number;
  recordsPerBatchMax: number;
}

export interface ClusterInfo {
  clusterId: string;
  partitions: number;
  /** The partitions this log-node stores. */
  hostedPartitions: number[];
  nodeId: string;
  /** Absent from log-nodes older than stop 9. */
  limits?: LogLimits;
}

export interface ReadOptions {
  maxBytes?: number;
  waitMs?: number;
  signal?: AbortSignal;
}

export interface FetchPosition extends TopicPartition {
  offset: number;
}

/**
 * An idempotent producer's identity (Kafka's InitProducerId): batches carry it with their
 * sequence, and the log appends each (producer, partition, sequence) once.
 */
export interface ProducerIdentity {
  producerId: number;
  producerEpoch: number;
}

export interface LogClient {
  cluster(): Promise<ClusterInfo>;
  /** Every topic the log holds: the collections and the internal topics (shared/topics.ts). */
  topics(): Promise<TopicInfo[]>;
  /**
   * The topic, created when missing (a collection gets the cluster's partition count); `configs`
   * override the node's defaults at creation and change an existing topic's. A collection topic
   * is also created by its first append.
   */
  ensureTopic(name: string, configs?: Partial<TopicConfigs>): Promise<TopicInfo>;
  /**
   * An existing topic's configs changed (none given: the topic as it is); 404 `unknown_topic`
   * when there is none, which is never created here: a caller that learned the name before a
   * drop or a view's swap retired it must not bring it back, as ensureTopic would.
   */
  setTopicConfigs(name: string, configs: Partial<TopicConfigs>): Promise<TopicInfo>;
  /**
   * Drops a collection's topic and every record in it (Kafka's DeleteTopics). A topic created
   * under the name later is a new incarnation (TopicInfo.incarnation) and starts empty. 404
   * `unknown_topic` when there is none; internal topics are refused.
   */
  deleteTopic(name: string): Promise<void>;
  /** A new producer id (epoch 0), never handed out before by this log. */
  initProducerId(): Promise<ProducerIdentity>;
  append(
    topic: string,
    partition: number,
    batch: Uint8Array,
    signal?: AbortSignal,
  ): Promise<AppendResult>;
  read(
    topic: string,
    partition: number,
    offset: number,
    options?: ReadOptions,
  ): Promise<ReadResult>;
  /**
   * Several topic-partitions of one log-node in one read (`fetchGroups` says which partitions go
   * together); each outcome is the position's batches or its own error, in the order asked.
   * `maxBytes` applies per position.
   */
  fetch(positions: readonly FetchPosition[], options?: ReadOptions): Promise<FetchOutcome[]>;
  /**
   * Hands back the bytes of a read or fetch once nothing reads them any more (written to a
   * socket): a log that fills reads from a pool of buffers takes them back. Optional; a caller
   * that keeps views into the bytes never calls it.
   */
  giveBack?(batches: Buffer): void;
  /** Partition numbers grouped by the log-node that stores them (the same for every topic). */
  fetchGroups(partitions: readonly number[]): number[][];
  /**
   * Every topic-partition the log stores that can answer now: one whose log failed or that has
   * no leader is left out, so one partition does not fail the others. A caller that needs a
   * given partition takes its absence as unavailable, never as an empty partition.
   */
  offsets(): Promise<PartitionOffsets[]>;
  /** Every topic-partition the log stores, with its bytes on disk (Kafka's DescribeLogDirs). */
  diskBytes(): Promise<PartitionBytes[]>;
}

/** fetchGroups of a client whose other end is one log-node: every partition in one read. */
export function oneNodeFetchGroups(partitions: readonly number[]): number[][] {
  return partitions.length === 0 ? [] : [[...partitions]];
}

export const LOG_ANSWER_MS_MAX = 10_000;

/** The default bound of partitions a log-node holds, and so of partitions in one read. */
export const PARTITIONS_MAX = 1024;
