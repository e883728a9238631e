/**
 * A log-node: the topics of one data directory and their hosted partitions, the producer ids it
 * hands out, the node-wide bounds (long-polls), and the background work (compaction, retention)
 * that runs over them. Every collection topic has the cluster's partition count and this node
 * hosts the same partition numbers of each; an internal topic's one partition lives with
 * partition 0.
 */
import { enforceBatchLimits, NO_PRODUCER_ID } from '../shared/batch-codec.js';
import { badRequest, noSuchTopic, TailbaseError } from '../shared/errors.js';
import type {
  ClusterInfo,
  PartitionBytes,
  PartitionOffsets,
  ProducerIdentity,
} from '../shared/log-api.js';
import { checkInteger } from '../shared/query-params.js';
import type { Logger } from '../shared/logger.js';
import { collectionId } from '../shared/token.js';
import {
  INTERNAL_TOPIC_PARTITIONS,
  INTERNAL_TOPICS,
  isCollectionTopic,
  isInternalTopic,
  type TopicConfigs,
  type TopicInfo,
} from '../shared/topics.js';
import type { Clock } from './clock.js';
import type { ClusterMeta } from './cluster-meta.js';
import { dirtyShareOf } from './cleaner-checkpoint.js';
import type { LogNodeConfig } from './config.js';
import {
  diskFull,
  partitionFailed,
  PartitionLog,
  type PartitionReadResult,
  type PartitionTopic,
} from './partition-log.js';
import { ProducerIds } from './producer-ids.js';
import { ReadBuffers } from './read-buffers.js';
import { unknownProducer } from './producer-state.js';
import { isErrno } from '../shared/file-io.js';
import { checkTopicConfigs, defaultTopicConfigs } from './topic-configs.js';
import {
  dropTopicFiles,
  partitionDir,
  readDroppedTopics,
  readTopics,
  removeDroppedFiles,
  writeTopic,
} from './topic-store.js';

type PartitionSlot = { log: PartitionLog; error?: undefined } | { log?: undefined; error: Error };

/** A topic as the node holds it: its configs (which its partitions read) and its hosted slots. */
interface LogTopic extends PartitionTopic {
  readonly partitions: number;
  configs: TopicConfigs;
  readonly slots: Map<number, PartitionSlot>;
}

export interface PartitionStatus {
  topic: string;
  partition: number;
  logStartOffset: number | null;
  endOffset: number | null;
  sizeBytes: number;
  segments: number;
  producers: number;
  truncatedBytesOnLoad: number;
  /** Compacted topics: offsets below this are clean (cleaner-checkpoint.ts). */
  cleanedThroughOffset?: number;
  /** Compacted topics: closed bytes past that point over all closed bytes (the cleaner's gate). */
  dirtyRatio?: number;
  error?: string;
}

export class LogNode {
  readonly config: LogNodeConfig;
  readonly meta: ClusterMeta;
  private readonly topicsByName = new Map<string, LogTopic>();
  /** Dropped topic names → the incarnation a topic created under the name next gets. */
  private readonly dropped: Map<string, number>;
  private readonly producerIds: ProducerIds;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private longPolls = 0;
  closing = false;
  /** The buffers every partition's file reads fill (read-buffers.ts). */
  readonly readBuffers: ReadBuffers;

  constructor(config: LogNodeConfig, meta: ClusterMeta, clock: Clock, logger: Logger) {
    this.config = config;
    this.meta = meta;
    this.clock = clock;
    this.logger = logger;
    this.readBuffers = new ReadBuffers(config.readBuffersIdleBytesMax);
    this.producerIds = new ProducerIds(config.dataDir, config.fileIO);
    this.dropped = readDroppedTopics(config.fileIO, config.dataDir);
    removeDroppedFiles(config.dataDir);
    for (const info of readTopics(config.fileIO, config.dataDir)) this.openTopic(info);
    for (const name of INTERNAL_TOPICS) {
      if (!this.topicsByName.has(name)) this.createTopic(name, {});
    }
  }

  /** The partition numbers of a topic stored here. */
  private hostedPartitions(topic: string): number[] {
    if (!isInternalTopic(topic)) return this.meta.hostedPartitions;
    return this.meta.hostedPartitions.includes(0) ? [0] : [];
  }

  private openTopic(info: TopicInfo): LogTopic {
    const topic: LogTopic = {
      name: info.name,
      partitions: info.partitions,
      incarnation: info.incarnation ?? 0,
      configs: { ...defaultTopicConfigs(this.config, info.name), ...info.configs },
      slots: new Map(),
    };
    this.topicsByName.set(info.name, topic);
    for (const p of this.hostedPartitions(info.name)) this.openSlot(topic, p);
    return topic;
  }

  /** Opens one hosted partition of a topic; one that fails stays stopped, with its error. */
  private openSlot(topic: LogTopic, p: number): PartitionSlot {
    const dir = partitionDir(this.config.dataDir, topic.name, p);
    let slot: PartitionSlot;
    try {
      slot = {
        log: PartitionLog.open(
          topic,
          p,
          dir,
          this.config,
          this.clock,
          this.logger,
          this.readBuffers,
        ),
      };
    } catch (error) {
      this.logger.error(
        { topic: topic.name, partition: p, err: error },
        'partition failed to open; it stays stopped',
      );
      slot = { error: error as Error };
    }
    topic.slots.set(p, slot);
    return slot;
  }

  /**
   * Writes a topic's topic.json; a full disk is 507 disk_full, and nothing of the topic changed
   * (the file is replaced atomically), so a later call tries again.
   */
  private persistTopic(info: TopicInfo, newPartitions: readonly number[] = []): void {
    try {
      writeTopic(this.config.fileIO, this.config.dataDir, info, newPartitions);
    } catch (error) {
      if (!isErrno(error, 'ENOSPC')) throw error;
      throw new TailbaseError(
        507,
        'disk_full',
        `topic ${info.name} could not be written: the disk is full; retry once there is room`,
        { topic: info.name },
        { cause: error },
      );
    }
  }

  /** Writes a new topic's topic.json, then opens its partitions. */
  private createTopic(name: string, configs: Partial<TopicConfigs>): LogTopic {
    const info: TopicInfo = {
      name,
      partitions: isInternalTopic(name) ? INTERNAL_TOPIC_PARTITIONS : this.meta.partitions,
      configs: { ...defaultTopicConfigs(this.config, name), ...configs },
      incarnation: this.dropped.get(name) ?? 0,
    };
    this.persistTopic(info, this.hostedPartitions(name));
    this.logger.info(
      { topic: name, partitions: info.partitions, configs: info.configs },
      'created a topic',
    );
    return this.openTopic(info);
  }

  /** A topic name a log-node can hold, else 400 `invalid_topic`. */
  private checkTopicName(name: string): void {
    if (!isCollectionTopic(name) && !isInternalTopic(name)) {
      throw badRequest(
        'invalid_topic',
        'a topic is a collection name (^[a-z][a-z0-9_-]{0,63}$) or an internal topic',
        { topic: name.slice(0, 80), internalTopics: INTERNAL_TOPICS },
      );
    }
  }

  /**
   * The topic, created when missing (collections only: internal topics exist from the first
   * start); `configs` change an existing topic's, persisted before they apply. A collection whose
   * collection id (shared/token.ts) another collection has is refused: tokens name it by the id.
   */
  ensureTopic(name: string, configs: Partial<TopicConfigs> = {}): TopicInfo {
    return infoOf(this.ensure(name, configs));
  }

  /**
   * An existing topic's configs changed, persisted before they apply; 404 `unknown_topic` when
   * there is none: a caller that learned the name before a drop must not create it again.
   */
  setTopicConfigs(name: string, configs: Partial<TopicConfigs>): TopicInfo {
    this.checkTopicName(name);
    const changes = checkTopicConfigs(name, configs, this.config);
    const existing = this.topicsByName.get(name);
    if (existing === undefined) throw noSuchTopic(name);
    return infoOf(this.changeConfigs(existing, changes));
  }

  private ensure(name: string, configs: Partial<TopicConfigs>): LogTopic {
    this.checkTopicName(name);
    const changes = checkTopicConfigs(name, configs, this.config);
    const existing = this.topicsByName.get(name);
    if (existing === undefined) {
      // Ids at each topic's own incarnation: a collection made again after a drop is named by
      // the id of `name/k`, and that one must not clash either.
      const id = collectionId(name, this.dropped.get(name) ?? 0);
      const clash = [...this.topicsByName.entries()].find(
        ([other, topic]) =>
          isCollectionTopic(other) && collectionId(other, topic.incarnation) === id,
      )?.[0];
      if (clash !== undefined) {
        throw new TailbaseError(
          409,
          'collection_id_collision',
          `collection ${name} has the same collection id (CRC-32C of the name) as collection ${clash}; choose another name`,
          { topic: name, collidesWith: clash, collectionId: id },
        );
      }
      return this.createTopic(name, changes);
    }
    return this.changeConfigs(existing, changes);
  }

  private changeConfigs(existing: LogTopic, changes: Partial<TopicConfigs>): LogTopic {
    const updated = { ...existing.configs, ...changes };
    if (
      Object.entries(changes).some(
        ([key, value]) => existing.configs[key as keyof TopicConfigs] !== value,
      )
    ) {
      this.persistTopic({ ...infoOf(existing), configs: updated });
      existing.configs = updated;
      this.logger.info(
        { topic: existing.name, configs: updated },
        'changed the configs of a topic',
      );
    }
    return existing;
  }

  /**
   * Drops a collection's topic: its files go (crash-safely, topic-store.ts) and its partitions
   * close, waking their long-polls. A collection created again under the name is a new
   * incarnation, empty. 404 `unknown_topic` when there is none; internal topics stay.
   */
  async deleteTopic(name: string): Promise<void> {
    this.checkTopicName(name);
    if (!isCollectionTopic(name)) {
      throw badRequest('invalid_topic', `${name} is an internal topic: it cannot be dropped`, {
        topic: name,
      });
    }
    const topic = this.topicsByName.get(name);
    if (topic === undefined) throw noSuchTopic(name);
    this.dropped.set(name, topic.incarnation + 1);
    try {
      dropTopicFiles(this.config.fileIO, this.config.dataDir, name, this.dropped);
    } catch (error) {
      this.dropped.set(name, topic.incarnation);
      throw error;
    }
    this.topicsByName.delete(name);
    await Promise.all([...topic.slots.values()].map((slot) => slot.log?.close()));
    removeDroppedFiles(this.config.dataDir);
    this.logger.info({ topic: name, incarnation: topic.incarnation }, 'dropped a topic');
  }

  topics(): TopicInfo[] {
    return [...this.topicsByName.values()].map(infoOf).sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  /**
   * A new producer id, never handed out before by this log: only the log-node hosting partition
   * 0 hands them out, so ids are unique across the cluster.
   */
  initProducerId(): ProducerIdentity {
    if (!this.meta.hostedPartitions.includes(0)) {
      throw new TailbaseError(
        404,
        'partition_not_hosted',
        'producer ids are handed out by the log-node that hosts partition 0',
        { partition: 0, hostedPartitions: this.meta.hostedPartitions },
      );
    }
    return { producerId: this.producerIds.take(), producerEpoch: 0 };
  }

  /**
   * The open partition of a topic named by route parameters: 400 for a bad name or number, 404
   * for a topic that does not exist or a partition another node hosts, 503 if it failed.
   */
  partition(topicName: string, param: string): PartitionLog {
    this.checkTopicName(topicName);
    const topic = this.topicsByName.get(topicName);
    if (topic === undefined) throw noSuchTopic(topicName);
    return this.partitionOf(topic, param);
  }

  /**
   * The partition an append goes to. A collection topic that does not exist yet is created by its
   * first append, but only once that append is known to be good (its partition is one this node
   * stores and its batch passes the limits a new topic would have): a refused append creates
   * nothing. An append that must create nothing (a view processor's) goes through `partition`.
   */
  appendTarget(topicName: string, param: string, batch: Uint8Array): PartitionLog {
    const existing = this.topicsByName.get(topicName);
    if (existing !== undefined) return this.partitionOf(existing, param);
    this.checkTopicName(topicName);
    const { partitions, hostedPartitions } = this.meta;
    if (!/^\d+$/.test(param) || Number(param) >= partitions) {
      throw badRequest(
        'invalid_partition',
        `partition of topic ${topicName} must be an integer from 0 to ${partitions - 1}`,
        { topic: topicName, partitions },
      );
    }
    if (!hostedPartitions.includes(Number(param))) {
      throw new TailbaseError(
        404,
        'partition_not_hosted',
        `partition ${param} of topic ${topicName} lives on another log-node`,
        { topic: topicName, partition: Number(param), hostedPartitions },
      );
    }
    const { maxMessageBytes } = defaultTopicConfigs(this.config, topicName);
    const header = enforceBatchLimits(batch, {
      ...this.config,
      batchBytesMax: Math.min(this.config.batchBytesMax, maxMessageBytes),
    });
    // A new partition knows no producer: only a first batch (sequence 0) can be appended to it.
    if (header.producerId !== NO_PRODUCER_ID && header.baseSequence !== 0) {
      throw unknownProducer(header.producerId, header.baseSequence);
    }
    return this.partitionOf(this.ensure(topicName, {}), param);
  }

  private partitionOf(topic: LogTopic, param: string): PartitionLog {
    if (!/^\d+$/.test(param) || Number(param) >= topic.partitions) {
      throw badRequest(
        'invalid_partition',
        `partition of topic ${topic.name} must be an integer from 0 to ${topic.partitions - 1}`,
        { topic: topic.name, partitions: topic.partitions },
      );
    }
    const partition = Number(param);
    let slot = topic.slots.get(partition);
    if (slot === undefined) {
      throw new TailbaseError(
        404,
        'partition_not_hosted',
        `partition ${partition} of topic ${topic.name} lives on another log-node`,
        { topic: topic.name, partition, hostedPartitions: this.hostedPartitions(topic.name) },
      );
    }
    // Partitions that could not be created on a full disk are tried again (the topic's, together,
    // so none stays stopped for want of a call): their directories hold nothing acknowledged, and
    // recovery finishes whatever their creation left.
    if (slot.error && isErrno(slot.error, 'ENOSPC')) {
      for (const [p, other] of topic.slots) {
        if (other.error && isErrno(other.error, 'ENOSPC')) this.openSlot(topic, p);
      }
      slot = topic.slots.get(partition)!;
    }
    if (slot.error) {
      if (isErrno(slot.error, 'ENOSPC')) throw diskFull(topic.name, partition);
      throw partitionFailed(topic.name, partition);
    }
    return slot.log;
  }

  /** Who this node is and what it stores, with the batch limits a writer checks its own against. */
  clusterInfo(): ClusterInfo {
    return {
      clusterId: this.meta.clusterId,
      partitions: this.meta.partitions,
      hostedPartitions: this.meta.hostedPartitions,
      nodeId: this.meta.nodeId,
      limits: {
        batchBytesMax: this.config.batchBytesMax,
        recordBytesMax: this.config.recordBytesMax,
        recordsPerBatchMax: this.config.recordsPerBatchMax,
      },
    };
  }

  /**
   * A read's `maxBytes` (per partition) and `waitMs`, each checked against the node's bounds (400
   * past them); absent: readBytesMax and no wait.
   */
  readLimits(maxBytes: number | undefined, waitMs: number | undefined) {
    const { config } = this;
    return {
      maxBytes: checkInteger(maxBytes, 'max_bytes', 1, config.readBytesMax, config.readBytesMax),
      waitMs: checkInteger(waitMs, 'wait_ms', 0, config.longPollWaitMsMax, 0),
    };
  }

  /** One partition's batches from `offset`; a wait counts against longPollsMax while it lasts. */
  async read(
    log: PartitionLog,
    offset: number,
    maxBytes: number,
    waitMs: number,
    signal?: AbortSignal,
  ): Promise<PartitionReadResult> {
    const release = waitMs > 0 ? this.admitLongPoll() : () => undefined;
    try {
      return await log.read(offset, maxBytes, waitMs, signal);
    } finally {
      release();
    }
  }

  private slots(): { topic: string; partition: number; slot: PartitionSlot }[] {
    return [...this.topicsByName.values()]
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .flatMap((topic) =>
        [...topic.slots].map(([partition, slot]) => ({ topic: topic.name, partition, slot })),
      );
  }

  openPartitions(): PartitionLog[] {
    return this.slots().flatMap(({ slot }) => (slot.log && !slot.log.failed ? [slot.log] : []));
  }

  /** Counts a long-poll in; 503 past longPollsMax. Returns the release. */
  admitLongPoll(): () => void {
    if (this.longPolls >= this.config.longPollsMax) {
      throw new TailbaseError(503, 'too_many_long_polls', 'too many reads are waiting for data', {
        limit: 'longPollsMax',
        max: this.config.longPollsMax,
      });
    }
    this.longPolls++;
    let released = false;
    return () => {
      if (!released) {
        released = true;
        this.longPolls--;
      }
    };
  }

  failedPartitions(): { topic: string; partition: number }[] {
    return this.slots().flatMap(({ topic, partition, slot }) =>
      slot.error || slot.log?.failed ? [{ topic, partition }] : [],
    );
  }

  offsets(): PartitionOffsets[] {
    return this.openPartitions().map((log) => ({
      topic: log.topic.name,
      partition: log.partition,
      logStartOffset: log.logStartOffset,
      endOffset: log.endOffset,
    }));
  }

  /** Each open partition's segment bytes (what DescribeLogDirs answers). */
  diskBytes(): PartitionBytes[] {
    return this.openPartitions().map((log) => ({
      topic: log.topic.name,
      partition: log.partition,
      bytes: log.sizeBytes,
    }));
  }

  status(): {
    nodeId: string;
    clusterId: string;
    longPolls: number;
    partitions: PartitionStatus[];
  } {
    return {
      nodeId: this.meta.nodeId,
      clusterId: this.meta.clusterId,
      longPolls: this.longPolls,
      partitions: this.slots().map(({ topic, partition, slot }) => {
        const error = slot.error ?? slot.log?.failed ?? null;
        const log = slot.log;
        return {
          topic,
          partition,
          logStartOffset: log ? log.logStartOffset : null,
          endOffset: log ? log.endOffset : null,
          sizeBytes: log ? log.sizeBytes : 0,
          segments: log ? log.segmentCount : 0,
          producers: log ? log.producerCount : 0,
          truncatedBytesOnLoad: log ? log.truncatedBytesOnLoad : 0,
          ...(log && log.topic.configs.cleanupPolicy === 'compact' ? cleanerStatusOf(log) : {}),
          ...(error ? { error: error.message } : {}),
        };
      }),
    };
  }

  async close(): Promise<void> {
    this.closing = true;
    await Promise.all(this.slots().map(({ slot }) => slot.log?.close()));
    this.logger.info('log-node closed');
  }
}

function cleanerStatusOf(
  log: PartitionLog,
): Pick<PartitionStatus, 'cleanedThroughOffset' | 'dirtyRatio'> {
  const { cleanedThroughOffset, dirtyRatio } = dirtyShareOf(log);
  return { cleanedThroughOffset, dirtyRatio };
}

function infoOf(topic: LogTopic): TopicInfo {
  return {
    name: topic.name,
    partitions: topic.partitions,
    configs: { ...topic.configs },
    ...(topic.incarnation === 0 ? {} : { incarnation: topic.incarnation }),
  };
}
