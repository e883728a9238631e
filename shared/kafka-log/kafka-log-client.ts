/**
 * The log contract (shared/log-api.ts) over the Kafka protocol, for the gateway and serve-nodes
 * of a cluster whose log is tailbase's log-nodes or a Kafka-compatible cluster: this facade
 * connects and hands each call to the part that holds it (README.md lists them). The gateway's
 * record batches travel as built and Fetch answers the stored batches as raw bytes: nothing is
 * re-encoded.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { TailbaseError } from '../errors.js';
import type { FetchOutcome } from '../fetch-answer.js';
import type {
  AppendResult,
  ClusterInfo,
  FetchPosition,
  LogClient,
  PartitionBytes,
  PartitionOffsets,
  ProducerIdentity,
  ReadOptions,
  ReadResult,
} from '../log-api.js';
import type { TopicConfigs, TopicInfo } from '../topics.js';
import { BrokerPool } from './broker-pool.js';
import { ClusterMetadata } from './cluster-metadata.js';
import { kafkaLogConfig, type KafkaLogConfig, type KafkaLogOptions } from './config.js';
import { Fetcher } from './fetcher.js';
import { GroupCoordinators, type CommittedOffset } from './group-coordinator.js';
import { GroupMember, type GroupMemberOptions } from './group-member.js';
import { LogDirs } from './log-dirs.js';
import { OffsetReader } from './offsets.js';
import { PartitionHosting } from './partition-hosting.js';
import { Producer } from './producer.js';
import { TopicAdmin } from './topic-admin.js';

export class KafkaLogClient implements LogClient {
  readonly config: KafkaLogConfig;
  private readonly pool: BrokerPool;
  private readonly metadata: ClusterMetadata;
  private readonly hosting: PartitionHosting;
  private readonly topicAdmin: TopicAdmin;
  private readonly producer: Producer;
  private readonly fetcher: Fetcher;
  private readonly offsetReader: OffsetReader;
  private readonly logDirs: LogDirs;
  private readonly coordinators: GroupCoordinators;

  private constructor(config: KafkaLogConfig) {
    this.config = config;
    this.pool = new BrokerPool(config);
    this.metadata = new ClusterMetadata(config, this.pool);
    const parts = { config, pool: this.pool, metadata: this.metadata };
    this.hosting = new PartitionHosting(parts);
    this.topicAdmin = new TopicAdmin(parts);
    this.producer = new Producer(parts, this.topicAdmin);
    this.fetcher = new Fetcher(parts);
    this.offsetReader = new OffsetReader(parts);
    this.logDirs = new LogDirs(parts);
    this.coordinators = new GroupCoordinators(parts);
  }

  /** A client whose first Metadata has answered, retried for bootstrapWaitMs while none does. */
  static async connect(options: KafkaLogOptions): Promise<KafkaLogClient> {
    const client = new KafkaLogClient(kafkaLogConfig(options));
    const deadline = Date.now() + client.config.bootstrapWaitMs;
    for (;;) {
      try {
        await client.metadata.refresh();
        await client.hosting.learn();
        await client.topicAdmin.verify(client.hosting.known);
        return client;
      } catch (error) {
        if (
          !(error instanceof TailbaseError) ||
          error.code !== 'log_unreachable' ||
          Date.now() >= deadline
        ) {
          client.close();
          throw error;
        }
        await sleep(client.config.bootstrapRetryMs);
      }
    }
  }

  async cluster(): Promise<ClusterInfo> {
    const snapshot = await this.metadata.current();
    const partitions = await this.topicAdmin.collectionPartitions();
    return {
      clusterId: snapshot.clusterId,
      partitions,
      hostedPartitions: Array.from({ length: partitions }, (_, p) => p),
      nodeId: `kafka:${this.config.bootstrap.map((b) => `${b.host}:${b.port}`).join(',')}`,
    };
  }

  topics(): Promise<TopicInfo[]> {
    return this.topicAdmin.topics();
  }

  ensureTopic(name: string, configs?: Partial<TopicConfigs>): Promise<TopicInfo> {
    return this.topicAdmin.ensureTopic(name, configs);
  }

  setTopicConfigs(name: string, configs: Partial<TopicConfigs>): Promise<TopicInfo> {
    return this.topicAdmin.setTopicConfigs(name, configs);
  }

  deleteTopic(name: string): Promise<void> {
    return this.topicAdmin.deleteTopic(name);
  }

  initProducerId(): Promise<ProducerIdentity> {
    return this.producer.initProducerId();
  }

  append(
    topic: string,
    partition: number,
    batch: Uint8Array,
    signal?: AbortSignal,
  ): Promise<AppendResult> {
    return this.producer.append(topic, partition, batch, signal);
  }

  read(
    topic: string,
    partition: number,
    offset: number,
    options?: ReadOptions,
  ): Promise<ReadResult> {
    return this.fetcher.read(topic, partition, offset, options);
  }

  fetch(positions: readonly FetchPosition[], options?: ReadOptions): Promise<FetchOutcome[]> {
    return this.fetcher.fetch(positions, options);
  }

  fetchGroups(partitions: readonly number[]): number[][] {
    return this.hosting.groups(partitions);
  }

  offsets(): Promise<PartitionOffsets[]> {
    return this.offsetReader.offsets();
  }

  diskBytes(): Promise<PartitionBytes[]> {
    return this.logDirs.diskBytes();
  }

  /** A member of a consumer group, not yet joined (start() joins it). */
  groupMember(options: GroupMemberOptions): GroupMember {
    return new GroupMember(this.config, this.coordinators, options);
  }

  /** Every offset a consumer group committed, with its metadata. */
  committedOffsets(groupId: string): Promise<CommittedOffset[]> {
    return this.coordinators.committed(groupId);
  }

  close(): void {
    this.pool.close();
  }
}
