/**
 * The log contract (shared/log-api.ts) over the Kafka protocol, for the gateway and serve-nodes
 * of a cluster whose log is tailbase's log-nodes or a Kafka-compatible cluster. The gateway's
 * record batches travel as built (its producer id, epoch and sequences inside) and Fetch answers
 * the stored batches as raw bytes, which the serve-node decodes itself: nothing is re-encoded.
 *
 * Each request goes to its partition's leader from Metadata; a leadership error
 * (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, ...) refreshes the metadata and sends it
 * again, at most leaderAttemptsMax times. Appends made in the same event-loop turn to partitions
 * led by one broker travel as one Produce request (acks=all); each still gets its own answer.
 */
import { asBuffer, readBatchHeader } from '../batch-codec.js';
import { CallBatcher } from '../call-batcher.js';
import { TailbaseError } from '../errors.js';
import type { FetchOutcome } from '../fetch-answer.js';
import { ApiKey, ErrorCode, type ResponseBody } from '../kafka/index.js';
import { parseTopicConfigs } from '../kafka/topic-configs.js';
import type {
  AppendResult,
  ClusterInfo,
  FetchPosition,
  LogClient,
  PartitionOffsets,
  ProducerIdentity,
  ReadOptions,
  ReadResult,
} from '../log-api.js';
import {
  INTERNAL_TOPIC_PARTITIONS,
  isCollectionTopic,
  isInternalTopic,
  isKnownTopicName,
  SETTINGS_TOPIC,
  TOPIC_CONFIG_NAMES,
  type TopicConfigs,
  type TopicInfo,
} from '../topics.js';
import type { BrokerConnection } from './broker-connection.js';
import { BrokerPool } from './broker-pool.js';
import { ClusterMetadata, type MetadataSnapshot } from './cluster-metadata.js';
import {
  kafkaLogConfig,
  type BrokerAddress,
  type KafkaLogConfig,
  type KafkaLogOptions,
} from './config.js';
import {
  DUPLICATE_BATCH_MESSAGE,
  HOSTED_PARTITIONS_CONFIG,
  hostedPartitionsOf,
  INCARNATION_CONFIG,
  LEADER_ERRORS,
  logErrorOf,
} from './errors.js';
import {
  MIN_INSYNC_REPLICAS,
  SAFETY_CONFIG_NAMES,
  unlikePartitions,
  unsafeTopic,
} from './topic-safety.js';

interface QueuedAppend {
  topic: string;
  partition: number;
  bytes: Buffer;
  signal?: AbortSignal;
}

/** A partition's answer that its leader moved: the append is sent again after a refresh. */
class LeaderMoved extends Error {
  constructor(readonly error: TailbaseError) {
    super(error.message);
  }
}

type AppendOutcome = AppendResult | LeaderMoved | Error;

/** Kafka's config resource types. */
const RESOURCE_TOPIC = 2;
const RESOURCE_BROKER = 4;
const EARLIEST_TIMESTAMP = -2;
const LATEST_TIMESTAMP = -1;
/** Produce requests out to one broker at once, from one client. */
const PRODUCE_REQUESTS_IN_FLIGHT_MAX = 4;
/** Kafka's batch header: baseOffset (8) and batchLength (4) precede the batchLength bytes. */
const BATCH_LENGTH_END = 12;
/** A non-transactional producer's transaction timeout: sent, never used. */
const TRANSACTION_TIMEOUT_MS = 60_000;
/** Kafka's defaults of delete.retention.ms and max.message.bytes, for a cluster that cannot say. */
const ASSUMED_DELETE_RETENTION_MS = 86_400_000;
const ASSUMED_MAX_MESSAGE_BYTES = 1_048_588;

export class KafkaLogClient implements LogClient {
  readonly config: KafkaLogConfig;
  private readonly pool: BrokerPool;
  private readonly metadata: ClusterMetadata;
  private readonly producers = new Map<string, CallBatcher<QueuedAppend, AppendOutcome>>();
  private partitionCount: Promise<number> | null = null;
  /**
   * The node id storing each partition number, from tailbase log-nodes' broker configs
   * (`tailbase.hosted.partitions`); empty on a Kafka cluster, whose brokers do not say.
   */
  private hostedBy = new Map<number, number>();
  /**
   * How far the cluster's topics can be checked (decided at connect): `kafka` in full; a
   * `tailbase` log-node has one replica and acknowledges after fsync, which is invariant 1 for it;
   * an `unverifiable` cluster has no DescribeConfigs or CreateTopics (librdkafka's mock).
   */
  private verification: 'kafka' | 'tailbase' | 'unverifiable' = 'kafka';
  /** Topics checked and found safe: a topic created by someone else is checked at first use. */
  private readonly checkedTopics = new Set<string>();

  private constructor(config: KafkaLogConfig) {
    this.config = config;
    this.pool = new BrokerPool(config);
    this.metadata = new ClusterMetadata(config, this.pool);
  }

  /** A client whose first Metadata has answered, retried for bootstrapWaitMs while none does. */
  static async connect(options: KafkaLogOptions): Promise<KafkaLogClient> {
    const client = new KafkaLogClient(kafkaLogConfig(options));
    const deadline = Date.now() + client.config.bootstrapWaitMs;
    for (;;) {
      try {
        await client.metadata.refresh();
        await client.learnHosting();
        await client.verify();
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

  /** Which broker stores which partition numbers, where the brokers say (tailbase log-nodes). */
  private async learnHosting(): Promise<void> {
    const snapshot = await this.metadata.current();
    const answers = await Promise.all(
      [...snapshot.brokers].map(async ([nodeId, address]) => {
        // A broker down now is asked no more: its partitions group by their leaders instead.
        const answer = await this.pool
          .connection(address)
          .request(
            ApiKey.DescribeConfigs,
            {
              resources: [
                {
                  resourceType: RESOURCE_BROKER,
                  resourceName: String(nodeId),
                  configurationKeys: [HOSTED_PARTITIONS_CONFIG],
                },
              ],
            },
            { timeoutMs: this.config.answerMsMax },
          )
          .catch(() => null);
        const value = answer?.results[0]?.configs.find((c) => c.name === HOSTED_PARTITIONS_CONFIG);
        return { nodeId, hosted: hostedPartitionsOf(value?.value) };
      }),
    );
    for (const { nodeId, hosted } of answers) {
      for (const partition of hosted) this.hostedBy.set(partition, nodeId);
    }
  }

  /**
   * Decides how far topics can be checked, says so where not in full (refused unless
   * allowUnverifiedTopics), and checks every topic tailbase keeps that exists.
   */
  private async verify(): Promise<void> {
    const where = this.config.bootstrap.map((b) => `${b.host}:${b.port}`).join(',');
    if (this.hostedBy.size > 0) {
      this.verification = 'tailbase';
      this.config.logger.info(
        { log: where },
        'the log is tailbase log-nodes: one replica each, a write acknowledged after its fsync (invariant 1); replication factor and min.insync.replicas are not asked of them',
      );
    } else if (!(await this.canDescribeTopics())) {
      this.verification = 'unverifiable';
      const message = `the Kafka cluster at ${where} has no DescribeConfigs or CreateTopics: tailbase cannot check its topics' ${SAFETY_CONFIG_NAMES.join(' and ')} (only their replication factor and partitions, from Metadata) nor create topics`;
      if (!this.config.allowUnverifiedTopics) {
        throw new TailbaseError(
          502,
          'topics_unverified',
          `${message}; --allow-unverified-topics goes on without`,
        );
      }
      this.config.logger.warn({ log: where }, `${message}; going on (--allow-unverified-topics)`);
    }
    const snapshot = await this.metadata.current();
    await this.checkTopics(snapshot, [...snapshot.topics.keys()]);
  }

  private canDescribeTopics(): Promise<boolean> {
    return this.admin(async (connection) => {
      for (const api of [ApiKey.DescribeConfigs, ApiKey.CreateTopics]) {
        const spoken = await connection.version(api).then(
          () => true,
          (error: unknown) => {
            if (error instanceof TailbaseError && error.code === 'log_unsupported') return false;
            throw error;
          },
        );
        if (!spoken) return false;
      }
      return true;
    });
  }

  /**
   * The collection and settings topics among `names`, refused (topic_misconfigured) where one
   * breaks invariant 1 or co-partitioning; the consumer offsets are Kafka's, not checked.
   */
  private async checkTopics(snapshot: MetadataSnapshot, names: string[]): Promise<void> {
    const collections = names.filter((name) => isCollectionTopic(name));
    if (collections.length > 0) {
      const expected = await this.collectionPartitions();
      for (const name of collections) {
        const count = snapshot.topics.get(name)?.leaders.length ?? expected;
        if (count !== expected) throw unlikePartitions(this.wire(name), count, expected);
      }
    }
    if (this.verification === 'tailbase') return;
    const checked = [...collections, ...names.filter((name) => name === SETTINGS_TOPIC)];
    const configs = this.verification === 'unverifiable' ? null : await this.safetyConfigs(checked);
    for (const name of checked) {
      const topic = snapshot.topics.get(name);
      if (topic === undefined) continue;
      const error = unsafeTopic(
        {
          topic: this.wire(name),
          replicationFactor: topic.replicationFactor,
          configs: configs?.get(name) ?? null,
        },
        this.config.safety,
      );
      if (error !== null) throw error;
    }
    for (const name of names) this.checkedTopics.add(name);
  }

  /** DescribeConfigs of the topics (by tailbase's names), the configs named. */
  private describeConfigs(
    names: string[],
    keys: string[],
  ): Promise<ResponseBody<typeof ApiKey.DescribeConfigs>> {
    return this.admin((connection) =>
      connection.request(
        ApiKey.DescribeConfigs,
        {
          resources: names.map((name) => ({
            resourceType: RESOURCE_TOPIC,
            resourceName: this.wire(name),
            configurationKeys: keys,
          })),
        },
        { timeoutMs: this.config.answerMsMax },
      ),
    );
  }

  /** min.insync.replicas and unclean.leader.election.enable of each topic, as the cluster says. */
  private async safetyConfigs(names: string[]): Promise<Map<string, Map<string, string>>> {
    const found = new Map<string, Map<string, string>>();
    if (names.length === 0) return found;
    const answer = await this.describeConfigs(names, SAFETY_CONFIG_NAMES);
    for (const name of names) {
      const result = answer.results.find((r) => r.resourceName === this.wire(name));
      if (result !== undefined && result.errorCode !== ErrorCode.NONE) {
        throw logErrorOf(result.errorCode, result.errorMessage, { topic: name });
      }
      found.set(
        name,
        new Map(
          (result?.configs ?? []).flatMap((c) => (c.value === null ? [] : [[c.name, c.value]])),
        ),
      );
    }
    return found;
  }

  /** A topic's name on the wire: the topic prefix, then tailbase's name of it. */
  private wire(topic: string): string {
    return this.config.topicPrefix + topic;
  }

  async cluster(): Promise<ClusterInfo> {
    const snapshot = await this.metadata.current();
    const partitions = await this.collectionPartitions();
    return {
      clusterId: snapshot.clusterId,
      partitions,
      hostedPartitions: Array.from({ length: partitions }, (_, p) => p),
      nodeId: `kafka:${this.config.bootstrap.map((b) => `${b.host}:${b.port}`).join(',')}`,
    };
  }

  /**
   * The partition count of every collection topic: the configured one, else that of the
   * collection topics that exist, else the brokers' num.partitions. Learned once.
   */
  private collectionPartitions(): Promise<number> {
    this.partitionCount ??= this.learnPartitionCount().catch((error: unknown) => {
      this.partitionCount = null;
      throw error;
    });
    return this.partitionCount;
  }

  private async learnPartitionCount(): Promise<number> {
    if (this.config.partitions !== null) return this.config.partitions;
    const snapshot = await this.metadata.current();
    for (const [name, topic] of snapshot.topics) {
      if (isCollectionTopic(name)) return topic.leaders.length;
    }
    const broker = snapshot.brokers.has(snapshot.controllerId)
      ? snapshot.controllerId
      : [...snapshot.brokers.keys()][0];
    const answer = await this.admin((connection) =>
      connection.request(
        ApiKey.DescribeConfigs,
        {
          resources: [
            {
              resourceType: RESOURCE_BROKER,
              resourceName: String(broker),
              configurationKeys: ['num.partitions'],
            },
          ],
        },
        { timeoutMs: this.config.answerMsMax },
      ),
    );
    const value = answer.results[0]?.configs.find((c) => c.name === 'num.partitions')?.value;
    const partitions = Number(value);
    if (!Number.isSafeInteger(partitions) || partitions < 1) {
      throw new TailbaseError(
        502,
        'cluster_misconfigured',
        'the Kafka cluster has no collection topic and does not say its num.partitions: give the partition count',
      );
    }
    return partitions;
  }

  async topics(): Promise<TopicInfo[]> {
    const snapshot = await this.metadata.refresh();
    const names = [...snapshot.topics.keys()].filter(isKnownTopicName).sort();
    return this.describe(snapshot, names);
  }

  /** Each topic's partition count, configs (the five tailbase keeps) and incarnation: DescribeConfigs. */
  private async describe(snapshot: MetadataSnapshot, names: string[]): Promise<TopicInfo[]> {
    if (names.length === 0) return [];
    if (this.verification === 'unverifiable') {
      return names.map((name) => ({
        name,
        partitions: snapshot.topics.get(name)?.leaders.length ?? 0,
        configs: assumedConfigs(name),
      }));
    }
    const keys = Object.values(TOPIC_CONFIG_NAMES);
    const answer = await this.describeConfigs(names, [...keys, INCARNATION_CONFIG]);
    return names.map((name) => {
      const result = answer.results.find((r) => r.resourceName === this.wire(name));
      if (result === undefined) {
        throw new TailbaseError(502, 'log_error', `DescribeConfigs did not answer topic ${name}`);
      }
      if (result.errorCode !== ErrorCode.NONE) {
        throw logErrorOf(result.errorCode, result.errorMessage, { topic: name });
      }
      const parsed = parseTopicConfigs(result.configs.filter((c) => keys.includes(c.name)));
      const configs = parsed.ok ? parsed.configs : {};
      const missing = (Object.keys(TOPIC_CONFIG_NAMES) as (keyof TopicConfigs)[])
        .filter((field) => configs[field] === undefined)
        .map((field) => TOPIC_CONFIG_NAMES[field]);
      if (!parsed.ok || missing.length > 0) {
        throw new TailbaseError(
          502,
          'log_error',
          `topic ${name}'s configs are not tailbase's: ${parsed.ok ? `${missing.join(', ')} missing` : parsed.message}`,
        );
      }
      const partitions = snapshot.topics.get(name)?.leaders.length ?? 0;
      const incarnation = Number(
        result.configs.find((c) => c.name === INCARNATION_CONFIG)?.value ?? '0',
      );
      if (!Number.isSafeInteger(incarnation) || incarnation < 0) {
        throw new TailbaseError(
          502,
          'log_error',
          `topic ${name}'s ${INCARNATION_CONFIG} is not a count: ${incarnation}`,
        );
      }
      return {
        name,
        partitions,
        configs: configs as TopicConfigs,
        ...(incarnation === 0 ? {} : { incarnation }),
      };
    });
  }

  /**
   * CreateTopics on every broker (tailbase's log-nodes each keep the topics they are told of;
   * a Kafka broker forwards to its controller and the others answer TOPIC_ALREADY_EXISTS).
   */
  async ensureTopic(name: string, configs: Partial<TopicConfigs> = {}): Promise<TopicInfo> {
    if (this.verification === 'unverifiable') return this.ensureUnverified(name, configs);
    const snapshot = await this.metadata.current();
    const internal = isInternalTopic(name);
    const numPartitions = internal ? INTERNAL_TOPIC_PARTITIONS : await this.collectionPartitions();
    const entriesOf = (given: Partial<TopicConfigs>) =>
      (Object.keys(given) as (keyof TopicConfigs)[])
        .filter((field) => given[field] !== undefined)
        .map((field) => ({ name: TOPIC_CONFIG_NAMES[field], value: String(given[field]) }));
    const configEntries = entriesOf(configs);
    // Internal topics keep the latest entry of each key forever, as a log-node's own do.
    const createEntries = internal
      ? entriesOf({ cleanupPolicy: 'compact', ...configs })
      : configEntries;
    // A tailbase log-node has one replica and no min.insync.replicas: it fsyncs before the ack.
    const replicated = this.verification === 'kafka';
    if (replicated) {
      createEntries.push({
        name: MIN_INSYNC_REPLICAS,
        value: String(this.config.safety.minInsyncReplicas),
      });
    }
    const brokers =
      snapshot.brokers.size > 0 ? [...snapshot.brokers.values()] : this.config.bootstrap;
    const answers = await Promise.all(
      brokers.map((address) =>
        this.pool.connection(address).request(
          ApiKey.CreateTopics,
          {
            topics: [
              {
                name: this.wire(name),
                numPartitions,
                replicationFactor: replicated ? this.config.safety.replicationFactor : -1,
                assignments: [],
                configs: createEntries,
              },
            ],
            timeoutMs: this.config.answerMsMax,
            validateOnly: false,
          },
          { timeoutMs: this.config.answerMsMax },
        ),
      ),
    );
    const existedOn: BrokerAddress[] = [];
    answers.forEach((answer, i) => {
      const result = answer.topics.find((topic) => topic.name === this.wire(name));
      if (result === undefined) {
        throw new TailbaseError(502, 'log_error', `CreateTopics did not answer topic ${name}`);
      }
      if (result.errorCode === ErrorCode.TOPIC_ALREADY_EXISTS) existedOn.push(brokers[i]);
      else if (result.errorCode !== ErrorCode.NONE) {
        throw logErrorOf(result.errorCode, result.errorMessage, { topic: name });
      }
    });
    if (existedOn.length > 0 && configEntries.length > 0) {
      await Promise.all(
        existedOn.map((address) => this.alterConfigs(address, this.wire(name), configEntries)),
      );
    }
    const refreshed = await this.metadata.refresh();
    await this.checkTopics(refreshed, [name]);
    const [info] = await this.describe(refreshed, [name]);
    return info;
  }

  /**
   * DeleteTopics on every broker, as ensureTopic creates (each tailbase log-node drops its own
   * copy; a Kafka broker forwards to its controller, so the others may answer that the topic is
   * already gone). Missing everywhere is the log contract's 404.
   */
  async deleteTopic(name: string): Promise<void> {
    const snapshot = await this.metadata.current();
    const brokers =
      snapshot.brokers.size > 0 ? [...snapshot.brokers.values()] : this.config.bootstrap;
    const answers = await Promise.all(
      brokers.map((address) =>
        this.pool
          .connection(address)
          .request(
            ApiKey.DeleteTopics,
            { topicNames: [this.wire(name)], timeoutMs: this.config.answerMsMax },
            { timeoutMs: this.config.answerMsMax },
          ),
      ),
    );
    let deleted = false;
    let missing: { errorCode: number; errorMessage: string | null } | undefined;
    for (const answer of answers) {
      const result = answer.responses.find((topic) => topic.name === this.wire(name));
      if (result === undefined) {
        throw new TailbaseError(502, 'log_error', `DeleteTopics did not answer topic ${name}`);
      }
      if (result.errorCode === ErrorCode.NONE) deleted = true;
      else if (result.errorCode === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) missing = result;
      else
        throw logErrorOf(result.errorCode, result.errorMessage ?? null, { topic: this.wire(name) });
    }
    if (!deleted && missing !== undefined) {
      throw logErrorOf(missing.errorCode, missing.errorMessage ?? null, { topic: this.wire(name) });
    }
    await this.metadata.refresh();
  }

  /**
   * On a cluster without CreateTopics: a topic that exists, checked as far as Metadata says; one
   * that does not is an error naming what to create.
   */
  private async ensureUnverified(name: string, configs: Partial<TopicConfigs>): Promise<TopicInfo> {
    const snapshot = await this.metadata.refresh();
    if (!snapshot.topics.has(name)) {
      throw new TailbaseError(
        502,
        'topics_unverified',
        `topic ${this.wire(name)} does not exist and the Kafka cluster has no CreateTopics: create it (replication factor ${this.config.safety.replicationFactor}, ${MIN_INSYNC_REPLICAS} ${this.config.safety.minInsyncReplicas})`,
        { topic: this.wire(name) },
      );
    }
    if (Object.values(configs).some((value) => value !== undefined)) {
      throw new TailbaseError(
        502,
        'log_unsupported',
        `the Kafka cluster has no IncrementalAlterConfigs: topic ${this.wire(name)}'s configs cannot be set`,
        { topic: this.wire(name) },
      );
    }
    await this.checkTopics(snapshot, [name]);
    const [info] = await this.describe(snapshot, [name]);
    return info;
  }

  /**
   * An existing topic's configs set (IncrementalAlterConfigs, on each broker that holds it: a
   * tailbase log-node keeps its own, a Kafka broker forwards to its controller).
   */
  private async alterConfigs(
    address: BrokerAddress,
    topic: string,
    configs: { name: string; value: string }[],
  ): Promise<void> {
    const answer = await this.pool.connection(address).request(
      ApiKey.IncrementalAlterConfigs,
      {
        resources: [
          {
            resourceType: RESOURCE_TOPIC,
            resourceName: topic,
            configs: configs.map(({ name, value }) => ({ name, configOperation: 0, value })),
          },
        ],
        validateOnly: false,
      },
      { timeoutMs: this.config.answerMsMax },
    );
    const result = answer.responses.find((r) => r.resourceName === topic);
    if (result === undefined) {
      throw new TailbaseError(502, 'log_error', `IncrementalAlterConfigs did not answer ${topic}`);
    }
    if (result.errorCode !== ErrorCode.NONE) {
      throw logErrorOf(result.errorCode, result.errorMessage, { topic });
    }
  }

  /** From the controller first (a tailbase log-node cluster hands ids out there), else any. */
  async initProducerId(): Promise<ProducerIdentity> {
    const answer = await this.admin(async (connection) => {
      const reply = await connection.request(
        ApiKey.InitProducerId,
        {
          transactionalId: null,
          transactionTimeoutMs: TRANSACTION_TIMEOUT_MS,
          producerId: -1,
          producerEpoch: -1,
        },
        { timeoutMs: this.config.answerMsMax },
      );
      if (reply.errorCode !== ErrorCode.NONE) throw logErrorOf(reply.errorCode, null);
      return reply;
    });
    return { producerId: Number(answer.producerId), producerEpoch: answer.producerEpoch };
  }

  /**
   * One administrative request, to the brokers in turn (the controller first) until one answers;
   * the last failure when none does.
   */
  private async admin<T>(ask: (connection: BrokerConnection) => Promise<T>): Promise<T> {
    await this.metadata.current();
    let lastError: unknown = null;
    for (const address of this.metadata.candidates()) {
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

  async append(
    topic: string,
    partition: number,
    batch: Uint8Array,
    signal?: AbortSignal,
  ): Promise<AppendResult> {
    const bytes = asBuffer(batch);
    for (let attempt = 1; ; attempt++) {
      const leader = await this.leaderOrCreate(topic, partition);
      const outcome = await this.producer(leader).call({ topic, partition, bytes, signal });
      if (!(outcome instanceof Error)) return outcome;
      if (!(outcome instanceof LeaderMoved)) throw outcome;
      if (attempt >= this.config.leaderAttemptsMax) throw outcome.error;
      await sleep(this.config.leaderRetryBackoffMs * attempt);
      await this.metadata.refresh();
    }
  }

  /** The partition's leader; a topic the cluster does not have is created first. */
  private async leaderOrCreate(topic: string, partition: number): Promise<BrokerAddress> {
    const leader = await this.metadata.leader(topic, partition);
    if (leader !== null && !this.checkedTopics.has(topic)) {
      await this.checkTopics(await this.metadata.current(), [topic]);
    }
    if (leader !== null) return leader;
    await this.ensureTopic(topic);
    const created = await this.metadata.leader(topic, partition);
    if (created === null) {
      throw new TailbaseError(
        404,
        'unknown_topic',
        `topic ${topic} has no partition ${partition}`,
        {
          topic,
          partition,
        },
      );
    }
    return created;
  }

  private producer(address: BrokerAddress): CallBatcher<QueuedAppend, AppendOutcome> {
    const key = `${address.host}:${address.port}`;
    let producer = this.producers.get(key);
    if (producer === undefined) {
      producer = new CallBatcher({
        batchMax: Number.MAX_SAFE_INTEGER,
        inFlightMax: PRODUCE_REQUESTS_IN_FLIGHT_MAX,
        batchWeightMax: this.config.produceRequestBytesMax,
        weigh: (queued) => queued.bytes.length + queued.topic.length,
        send: (queued) => this.produce(address, queued),
      });
      this.producers.set(key, producer);
    }
    return producer;
  }

  /**
   * The appends as Produce requests to one broker, each topic-partition at most once a request
   * (Kafka's rule): a second batch of one partition goes in the next request on the same
   * connection, which the broker handles after the first.
   */
  private async produce(address: BrokerAddress, queued: QueuedAppend[]): Promise<AppendOutcome[]> {
    // The k-th append of a topic-partition goes in round k: one pass, not a search of the rounds.
    const rounds: QueuedAppend[][] = [];
    const seen = new Map<string, number>();
    for (const item of queued) {
      const key = `${item.partition}:${item.topic}`;
      const round = seen.get(key) ?? 0;
      seen.set(key, round + 1);
      (rounds[round] ??= []).push(item);
    }
    const connection = this.pool.connection(address);
    const answered = await Promise.all(
      rounds.map((round) =>
        this.produceRound(connection, round).catch((error: unknown) => {
          this.staleOnUnreachable(error);
          return round.map(() => (error instanceof Error ? error : new Error(String(error))));
        }),
      ),
    );
    const byItem = new Map<QueuedAppend, AppendOutcome>();
    rounds.forEach((round, r) => round.forEach((item, i) => byItem.set(item, answered[r][i])));
    return queued.map((item) => byItem.get(item)!);
  }

  private async produceRound(
    connection: BrokerConnection,
    round: QueuedAppend[],
  ): Promise<AppendOutcome[]> {
    const topics = new Map<string, QueuedAppend[]>();
    for (const item of round) pushTo(topics, item.topic, item);
    const signals = round.flatMap((item) => (item.signal === undefined ? [] : [item.signal]));
    const answer = await connection.request(
      ApiKey.Produce,
      {
        transactionalId: null,
        acks: -1,
        timeoutMs: this.config.produceTimeoutMs,
        topicData: [...topics].map(([name, items]) => ({
          name: this.wire(name),
          partitionData: items.map((item) => ({ index: item.partition, records: item.bytes })),
        })),
      },
      {
        timeoutMs: this.config.produceTimeoutMs + this.config.answerMsMax,
        signal: signals.length === 0 ? undefined : AbortSignal.any(signals),
      },
    );
    return round.map((item) => {
      const found = answer.responses
        .find((topic) => topic.name === this.wire(item.topic))
        ?.partitionResponses.find((p) => p.index === item.partition);
      if (found === undefined) {
        return new TailbaseError(502, 'log_error', 'the broker did not answer every partition');
      }
      return appendOutcome(item, found);
    });
  }

  async read(
    topic: string,
    partition: number,
    offset: number,
    options: ReadOptions = {},
  ): Promise<ReadResult> {
    const [outcome] = await this.fetch([{ topic, partition, offset }], options);
    if ('error' in outcome) throw outcome.error;
    return {
      batches: outcome.batches,
      logStartOffset: outcome.logStartOffset,
      endOffset: outcome.endOffset,
    };
  }

  /**
   * Each position from its partition's leader; positions led by several brokers are fetched from
   * each at once (fetchGroups keeps a caller's positions on one broker while leaders stay put).
   */
  async fetch(
    positions: readonly FetchPosition[],
    options: ReadOptions = {},
  ): Promise<FetchOutcome[]> {
    const outcomes: FetchOutcome[] = new Array(positions.length);
    let todo = positions.map((position, index) => ({ ...position, index }));
    for (let attempt = 1; todo.length > 0; attempt++) {
      const groups = new Map<string, { address: BrokerAddress; items: typeof todo }>();
      for (const item of todo) {
        const address = await this.metadata.leader(item.topic, item.partition);
        if (address === null) {
          outcomes[item.index] = {
            topic: item.topic,
            partition: item.partition,
            error: logErrorOf(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `topic ${item.topic}`, {
              topic: item.topic,
              partition: item.partition,
            }),
          };
          continue;
        }
        const key = `${address.host}:${address.port}`;
        const group = groups.get(key) ?? { address, items: [] };
        group.items.push(item);
        groups.set(key, group);
      }
      const retry: typeof todo = [];
      const lastAttempt = attempt >= this.config.leaderAttemptsMax;
      // A retry after a leader moved answers at once: the caller's wait was spent.
      const waitMs = attempt === 1 ? (options.waitMs ?? 0) : 0;
      await Promise.all(
        [...groups.values()].map(async ({ address, items }) => {
          const answers = await this.fetchFrom(address, items, { ...options, waitMs }).catch(
            (error: unknown) => {
              this.staleOnUnreachable(error);
              throw error;
            },
          );
          items.forEach((item, i) => {
            const answer = answers[i];
            if ('leaderMoved' in answer && !lastAttempt) retry.push(item);
            else outcomes[item.index] = 'leaderMoved' in answer ? answer.outcome : answer;
          });
        }),
      );
      if (retry.length > 0) {
        await sleep(this.config.leaderRetryBackoffMs * attempt);
        await this.metadata.refresh();
      }
      todo = retry;
    }
    return outcomes;
  }

  private async fetchFrom(
    address: BrokerAddress,
    positions: readonly FetchPosition[],
    options: ReadOptions,
  ): Promise<(FetchOutcome | { leaderMoved: true; outcome: FetchOutcome })[]> {
    const topics = new Map<string, FetchPosition[]>();
    for (const position of positions) pushTo(topics, position.topic, position);
    const partitionMaxBytes = Math.min(
      options.maxBytes ?? this.config.partitionFetchBytesDefault,
      this.config.fetchBytesMax,
    );
    const waitMs = options.waitMs ?? 0;
    const connection = await this.pool.lease(address);
    // An abandoned long poll would hold the connection until it answers: close it instead.
    const abandon = () => connection.close();
    options.signal?.addEventListener('abort', abandon, { once: true });
    let answer: ResponseBody<typeof ApiKey.Fetch>;
    try {
      options.signal?.throwIfAborted();
      answer = await connection.request(
        ApiKey.Fetch,
        {
          replicaId: -1,
          maxWaitMs: waitMs,
          minBytes: 1,
          maxBytes: this.config.fetchBytesMax,
          isolationLevel: 0,
          sessionId: 0,
          sessionEpoch: -1,
          topics: [...topics].map(([topic, items]) => ({
            topic: this.wire(topic),
            partitions: items.map((item) => ({
              partition: item.partition,
              fetchOffset: item.offset,
              partitionMaxBytes,
            })),
          })),
          forgottenTopicsData: [],
          rackId: '',
        },
        { timeoutMs: this.config.answerMsMax + waitMs, signal: options.signal },
      );
    } finally {
      options.signal?.removeEventListener('abort', abandon);
      this.pool.release(connection);
    }
    return positions.map(({ topic, partition }) => {
      const found = answer.responses
        .find((entry) => entry.topic === this.wire(topic))
        ?.partitions.find((entry) => entry.partitionIndex === partition);
      if (found === undefined) {
        return {
          topic,
          partition,
          error: new TailbaseError(502, 'log_error', 'the broker did not answer every partition'),
        };
      }
      const logStartOffset = Number(found.logStartOffset);
      const endOffset = Number(found.highWatermark);
      if (found.errorCode === ErrorCode.NONE) {
        return {
          topic,
          partition,
          logStartOffset: Math.max(logStartOffset, 0),
          endOffset,
          batches: wholeBatches(found.records),
        };
      }
      const outcome = {
        topic,
        partition,
        error: logErrorOf(found.errorCode, null, {
          topic,
          partition,
          ...(logStartOffset >= 0 ? { logStartOffset } : {}),
          ...(endOffset >= 0 ? { endOffset } : {}),
        }),
      };
      return LEADER_ERRORS.has(found.errorCode) ? { leaderMoved: true as const, outcome } : outcome;
    });
  }

  /**
   * Partition numbers grouped by the broker that stores them (tailbase's log-nodes say so, and
   * one node leads a partition number in every topic), else by their leader in the topics known;
   * a partition no known topic has yet is a group of its own.
   */
  fetchGroups(partitions: readonly number[]): number[][] {
    const snapshot = this.metadata.known();
    const groups = new Map<string, number[]>();
    for (const partition of partitions) {
      const leader =
        this.hostedBy.get(partition) ??
        (snapshot === null ? -1 : referenceLeader(snapshot, partition));
      const key = leader < 0 ? `alone:${partition}` : `node:${leader}`;
      pushTo(groups, key, partition);
    }
    return [...groups.values()];
  }

  /** Earliest and latest offsets of every topic-partition tailbase keeps, from their leaders. */
  async offsets(): Promise<PartitionOffsets[]> {
    for (let attempt = 1; ; attempt++) {
      const snapshot = await this.metadata.refresh();
      const byLeader = new Map<number, { topic: string; partition: number }[]>();
      for (const [topic, { leaders }] of snapshot.topics) {
        if (!isKnownTopicName(topic)) continue;
        leaders.forEach((leader, partition) => {
          pushTo(byLeader, leader, { topic, partition });
        });
      }
      try {
        const answers = await Promise.all(
          [...byLeader].map(([leader, partitions]) =>
            this.listOffsets(snapshot, leader, partitions),
          ),
        );
        return answers
          .flat()
          .sort((a, b) =>
            a.topic === b.topic ? a.partition - b.partition : a.topic < b.topic ? -1 : 1,
          );
      } catch (error) {
        if (!(error instanceof LeaderMoved)) throw error;
        if (attempt >= this.config.leaderAttemptsMax) throw error.error;
        await sleep(this.config.leaderRetryBackoffMs * attempt);
      }
    }
  }

  private async listOffsets(
    snapshot: MetadataSnapshot,
    leader: number,
    partitions: { topic: string; partition: number }[],
  ): Promise<PartitionOffsets[]> {
    const address = snapshot.brokers.get(leader);
    if (address === undefined) {
      const { topic, partition } = partitions[0];
      throw new LeaderMoved(
        logErrorOf(ErrorCode.LEADER_NOT_AVAILABLE, `partition ${partition} of ${topic}`),
      );
    }
    const connection = this.pool.connection(address);
    const ask = (timestamp: number) =>
      connection.request(
        ApiKey.ListOffsets,
        {
          replicaId: -1,
          isolationLevel: 0,
          topics: [...groupByTopic(partitions)].map(([name, indexes]) => ({
            name: this.wire(name),
            partitions: indexes.map((partitionIndex) => ({ partitionIndex, timestamp })),
          })),
        },
        { timeoutMs: this.config.answerMsMax },
      );
    const [earliest, latest] = await Promise.all([ask(EARLIEST_TIMESTAMP), ask(LATEST_TIMESTAMP)]);
    const offsetOf = (answer: typeof earliest, topic: string, partition: number): number => {
      const found = answer.topics
        .find((entry) => entry.name === this.wire(topic))
        ?.partitions.find((entry) => entry.partitionIndex === partition);
      if (found === undefined) {
        throw new TailbaseError(502, 'log_error', 'the broker did not answer every partition');
      }
      if (found.errorCode === ErrorCode.NONE) return Number(found.offset);
      const error = logErrorOf(found.errorCode, null, { topic, partition });
      throw LEADER_ERRORS.has(found.errorCode) ? new LeaderMoved(error) : error;
    };
    return partitions.map(({ topic, partition }) => ({
      topic,
      partition,
      logStartOffset: offsetOf(earliest, topic, partition),
      endOffset: offsetOf(latest, topic, partition),
    }));
  }

  /**
   * A broker that cannot be reached may have lost its partitions' leadership (Kafka moves it to a
   * replica): the metadata is asked again, in the background, so the caller's retry finds the
   * new leader. The caller gets the failure as it was: whether the request reached the broker is
   * the caller's to judge.
   */
  private staleOnUnreachable(error: unknown): void {
    if (error instanceof TailbaseError && error.code === 'log_unreachable') {
      this.metadata.refresh().catch(() => undefined);
    }
  }

  close(): void {
    this.pool.close();
  }
}

function appendOutcome(
  item: QueuedAppend,
  answer: { errorCode: number; baseOffset: bigint; errorMessage: string | null },
): AppendOutcome {
  const baseOffset = Number(answer.baseOffset);
  const duplicate =
    (answer.errorCode === ErrorCode.NONE && answer.errorMessage === DUPLICATE_BATCH_MESSAGE) ||
    (answer.errorCode === ErrorCode.DUPLICATE_SEQUENCE_NUMBER && baseOffset >= 0);
  if (answer.errorCode === ErrorCode.NONE || duplicate) {
    const header = readBatchHeader(item.bytes);
    const lastOffsetDelta = header === null ? 0 : header.lastOffsetDelta;
    return { baseOffset, lastOffset: baseOffset + lastOffsetDelta, duplicate };
  }
  const error = logErrorOf(answer.errorCode, answer.errorMessage, {
    topic: item.topic,
    partition: item.partition,
  });
  return LEADER_ERRORS.has(answer.errorCode) ? new LeaderMoved(error) : error;
}

/**
 * A topic's configs where the cluster cannot say them (no DescribeConfigs): what tailbase would
 * have created, unbounded retention. Assumed, never asked: the log at connect says so.
 */
function assumedConfigs(name: string): TopicConfigs {
  return {
    cleanupPolicy: isInternalTopic(name) ? 'compact' : 'delete',
    retentionMs: -1,
    retentionBytes: -1,
    deleteRetentionMs: ASSUMED_DELETE_RETENTION_MS,
    maxMessageBytes: ASSUMED_MAX_MESSAGE_BYTES,
  };
}

/** The whole batches of a Fetch answer's records: a broker may cut the last one short. */
function wholeBatches(records: Buffer | null): Buffer {
  if (records === null) return Buffer.alloc(0);
  let end = 0;
  while (records.length - end >= BATCH_LENGTH_END) {
    const next = end + BATCH_LENGTH_END + records.readInt32BE(end + 8);
    if (next > records.length || next <= end) break;
    end = next;
  }
  return end === records.length ? records : records.subarray(0, end);
}

/** The leader of a partition number: in the settings topic for 0, else in a collection topic. */
function referenceLeader(snapshot: MetadataSnapshot, partition: number): number {
  if (partition === 0) {
    const settings = snapshot.topics.get(SETTINGS_TOPIC)?.leaders[0];
    if (settings !== undefined) return settings;
  }
  for (const [name, { leaders }] of snapshot.topics) {
    if (isCollectionTopic(name) && partition < leaders.length) return leaders[partition];
  }
  return -1;
}

function groupByTopic(partitions: { topic: string; partition: number }[]): Map<string, number[]> {
  const grouped = new Map<string, number[]>();
  for (const { topic, partition } of partitions) pushTo(grouped, topic, partition);
  return grouped;
}

/** Adds the value to the key's list in place (copying the list each time is quadratic). */
function pushTo<K, V>(lists: Map<K, V[]>, key: K, value: V): void {
  const list = lists.get(key);
  if (list === undefined) lists.set(key, [value]);
  else list.push(value);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
