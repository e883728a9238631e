/**
 * What the client knows of the cluster from Metadata: its id, its brokers, its controller and
 * each topic's partition leaders. Refreshed when a request meets a leadership error and when a
 * topic is asked for that is not known yet; concurrent refreshes share one request.
 */
import { TailbaseError } from '../errors.js';
import { ApiKey, ErrorCode } from '../kafka/index.js';
import type { BrokerConnection } from './broker-connection.js';
import type { BrokerPool } from './broker-pool.js';
import type { BrokerAddress, KafkaLogConfig } from './config.js';
import { logErrorOf } from './errors.js';

export interface TopicLeaders {
  /** The leader's node id of each partition, by index; -1 while it has none. */
  leaders: number[];
  /** The least replica count of its partitions. */
  replicationFactor: number;
}

export interface MetadataSnapshot {
  clusterId: string;
  controllerId: number;
  brokers: Map<number, BrokerAddress>;
  /** tailbase's topics by their names without the topic prefix; others are left out. */
  topics: Map<string, TopicLeaders>;
}

export class ClusterMetadata {
  private snapshot: MetadataSnapshot | null = null;
  private refreshing: Promise<MetadataSnapshot> | null = null;

  constructor(
    private readonly config: KafkaLogConfig,
    private readonly pool: BrokerPool,
  ) {}

  /** What is known now, without asking (null before the first answer). */
  known(): MetadataSnapshot | null {
    return this.snapshot;
  }

  /** What is known, refreshed first if nothing is yet. */
  async current(): Promise<MetadataSnapshot> {
    return this.snapshot ?? this.refresh();
  }

  /** Every topic's leaders, asked of a broker now (one request for concurrent callers). */
  refresh(): Promise<MetadataSnapshot> {
    this.refreshing ??= this.ask().finally(() => {
      this.refreshing = null;
    });
    return this.refreshing;
  }

  /**
   * The address of the leader of a topic-partition, refreshing once when the topic or its leader
   * is unknown; null when the cluster has no such topic.
   */
  async leader(topic: string, partition: number): Promise<BrokerAddress | null> {
    let snapshot = await this.current();
    if (leaderIn(snapshot, topic, partition) === undefined) snapshot = await this.refresh();
    const address = leaderIn(snapshot, topic, partition);
    if (address === undefined) return null;
    if (address === null) {
      throw new TailbaseError(
        503,
        'partition_not_hosted',
        `partition ${partition} of topic ${topic} has no leader now`,
        { topic, partition },
      );
    }
    return address;
  }

  /** Brokers to ask, the known ones first (the controller leading), then the bootstrap list. */
  candidates(): BrokerAddress[] {
    const known = this.snapshot
      ? [...this.snapshot.brokers.entries()]
          .sort(([a], [b]) =>
            a === this.snapshot!.controllerId ? -1 : b === this.snapshot!.controllerId ? 1 : a - b,
          )
          .map(([, address]) => address)
      : [];
    return [...known, ...this.config.bootstrap];
  }

  /**
   * One administrative request, to the brokers in turn (the controller first) until one answers;
   * the last failure when none does.
   */
  async admin<T>(ask: (connection: BrokerConnection) => Promise<T>): Promise<T> {
    await this.current();
    let lastError: unknown = null;
    for (const address of this.candidates()) {
      try {
        return await ask(this.pool.connection(address));
      } catch (error) {
        lastError = error;
        // An error of the request itself is the answer; another broker would give it too.
        if (
          error instanceof TailbaseError &&
          error.code !== 'log_unreachable' &&
          error.code !== 'partition_not_hosted'
        ) {
          throw error;
        }
      }
    }
    throw lastError;
  }

  /**
   * A broker that cannot be reached may have lost its partitions' leadership (Kafka moves it to a
   * replica): the metadata is asked again, in the background, so the caller's retry finds the
   * new leader. The caller gets the failure as it was: whether the request reached the broker is
   * the caller's to judge.
   */
  staleOnUnreachable(error: unknown): void {
    if (error instanceof TailbaseError && error.code === 'log_unreachable') {
      this.refresh().catch(() => undefined);
    }
  }

  private async ask(): Promise<MetadataSnapshot> {
    let lastError: unknown = null;
    for (const address of this.candidates()) {
      try {
        const answer = await this.pool
          .connection(address)
          .request(
            ApiKey.Metadata,
            { topics: null, allowAutoTopicCreation: false },
            { timeoutMs: this.config.answerMsMax },
          );
        const brokers = new Map(
          answer.brokers.map((broker) => [broker.nodeId, { host: broker.host, port: broker.port }]),
        );
        const topics = new Map<string, TopicLeaders>();
        const prefix = this.config.topicPrefix;
        for (const topic of answer.topics) {
          if (topic.errorCode !== ErrorCode.NONE || topic.name === null) continue;
          if (!topic.name.startsWith(prefix)) continue;
          const leaders: number[] = [];
          for (const partition of topic.partitions) {
            leaders[partition.partitionIndex] =
              partition.errorCode === ErrorCode.NONE ? partition.leaderId : -1;
          }
          topics.set(topic.name.slice(prefix.length), {
            leaders: Array.from(leaders, (leader) => leader ?? -1),
            replicationFactor: Math.min(...topic.partitions.map((p) => p.replicaNodes.length)),
          });
        }
        if (answer.clusterId === null) {
          throw logErrorOf(ErrorCode.UNKNOWN_SERVER_ERROR, 'the cluster has no id');
        }
        this.snapshot = {
          clusterId: answer.clusterId,
          controllerId: answer.controllerId,
          brokers,
          topics,
        };
        return this.snapshot;
      } catch (error) {
        lastError = error;
      }
    }
    throw lastError;
  }
}

/** The leader's address; null when the partition has none; undefined when it is not known. */
function leaderIn(
  snapshot: MetadataSnapshot,
  topic: string,
  partition: number,
): BrokerAddress | null | undefined {
  const leaders = snapshot.topics.get(topic)?.leaders;
  if (leaders === undefined || partition >= leaders.length) return undefined;
  const leader = leaders[partition];
  if (leader < 0) return null;
  return snapshot.brokers.get(leader) ?? null;
}
