/**
 * The topics of the log: created (CreateTopics on every broker), described (DescribeConfigs),
 * changed (IncrementalAlterConfigs), dropped (DeleteTopics), and checked against invariant 1 and
 * co-partitioning (topic-safety.ts) at connect and at first use, as far as the cluster can say.
 */
import { noSuchTopic, TailbaseError } from '../errors.js';
import { ApiKey, ErrorCode, type ResponseBody } from '../kafka/index.js';
import { parseTopicConfigs } from '../kafka/topic-configs.js';
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
import type { MetadataSnapshot } from './cluster-metadata.js';
import { ClientPart } from './client-parts.js';
import { wireName, type BrokerAddress } from './config.js';
import { INCARNATION_CONFIG, logErrorOf } from './errors.js';
import { RESOURCE_BROKER } from './partition-hosting.js';
import {
  MIN_INSYNC_REPLICAS,
  SAFETY_CONFIG_NAMES,
  unlikePartitions,
  unsafeTopic,
} from './topic-safety.js';

/** Kafka's config resource type of a topic. */
const RESOURCE_TOPIC = 2;
/** Kafka's defaults of delete.retention.ms and max.message.bytes, for a cluster that cannot say. */
const ASSUMED_DELETE_RETENTION_MS = 86_400_000;
const ASSUMED_MAX_MESSAGE_BYTES = 1_048_588;

export class TopicAdmin extends ClientPart {
  private partitionCount: Promise<number> | null = null;
  /**
   * How far the cluster's topics can be checked (decided at connect): `kafka` in full; a
   * `tailbase` log-node has one replica and acknowledges after fsync, which is invariant 1 for it;
   * an `unverifiable` cluster has no DescribeConfigs or CreateTopics (librdkafka's mock).
   */
  private verification: 'kafka' | 'tailbase' | 'unverifiable' = 'kafka';
  /** Topics checked and found safe: a topic created by someone else is checked at first use. */
  private readonly checkedTopics = new Set<string>();

  /**
   * Decides how far topics can be checked, says so where not in full (refused unless
   * allowUnverifiedTopics), and checks every topic tailbase keeps that exists.
   */
  async verify(hostingKnown: boolean): Promise<void> {
    const where = this.config.bootstrap.map((b) => `${b.host}:${b.port}`).join(',');
    if (hostingKnown) {
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
    return this.metadata.admin(async (connection) => {
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
        if (count !== expected)
          throw unlikePartitions(wireName(this.config, name), count, expected);
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
          topic: wireName(this.config, name),
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
    return this.metadata.admin((connection) =>
      connection.request(
        ApiKey.DescribeConfigs,
        {
          resources: names.map((name) => ({
            resourceType: RESOURCE_TOPIC,
            resourceName: wireName(this.config, name),
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
      const result = answer.results.find((r) => r.resourceName === wireName(this.config, name));
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

  /**
   * The partition count of every collection topic: the configured one, else that of the
   * collection topics that exist, else the brokers' num.partitions. Learned once.
   */
  collectionPartitions(): Promise<number> {
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
    const answer = await this.metadata.admin((connection) =>
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
      const result = answer.results.find((r) => r.resourceName === wireName(this.config, name));
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
    if (this.verification === 'unverifiable') {
      return this.ensureUnverified(name, configs, () => this.uncreatable(name));
    }
    const snapshot = await this.metadata.current();
    const internal = isInternalTopic(name);
    const numPartitions = internal ? INTERNAL_TOPIC_PARTITIONS : await this.collectionPartitions();
    const configEntries = configEntriesOf(configs);
    // Internal topics keep the latest entry of each key forever, as a log-node's own do.
    const createEntries = internal
      ? configEntriesOf({ cleanupPolicy: 'compact', ...configs })
      : configEntries;
    // A tailbase log-node has one replica and no min.insync.replicas: it fsyncs before the ack.
    const replicated = this.verification === 'kafka';
    if (replicated) {
      createEntries.push({
        name: MIN_INSYNC_REPLICAS,
        value: String(this.config.safety.minInsyncReplicas),
      });
    }
    const brokers = this.brokersOf(snapshot);
    const answers = await Promise.all(
      brokers.map((address) =>
        this.pool.connection(address).request(
          ApiKey.CreateTopics,
          {
            topics: [
              {
                name: wireName(this.config, name),
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
      const result = answer.topics.find((topic) => topic.name === wireName(this.config, name));
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
        existedOn.map((address) =>
          this.alterConfigs(address, wireName(this.config, name), configEntries),
        ),
      );
    }
    return this.describeOne(name);
  }

  /**
   * An existing topic's configs set on every broker, as ensureTopic creates (each tailbase
   * log-node keeps its own topics; a Kafka broker forwards to its controller). A broker without
   * the topic answers IncrementalAlterConfigs UNKNOWN_TOPIC_OR_PARTITION: the contract's 404.
   */
  async setTopicConfigs(name: string, configs: Partial<TopicConfigs>): Promise<TopicInfo> {
    const missing = () => noSuchTopic(wireName(this.config, name));
    if (this.verification === 'unverifiable') return this.ensureUnverified(name, configs, missing);
    const entries = configEntriesOf(configs);
    if (entries.length > 0) {
      const brokers = this.brokersOf(await this.metadata.current());
      await Promise.all(
        brokers.map((address) => this.alterConfigs(address, wireName(this.config, name), entries)),
      );
    }
    return this.describeOne(name, missing);
  }

  /**
   * DeleteTopics on every broker, as ensureTopic creates (each tailbase log-node drops its own
   * copy; a Kafka broker forwards to its controller, so the others may answer that the topic is
   * already gone). Missing everywhere is the log contract's 404.
   */
  async deleteTopic(name: string): Promise<void> {
    const brokers = this.brokersOf(await this.metadata.current());
    const answers = await Promise.all(
      brokers.map((address) =>
        this.pool
          .connection(address)
          .request(
            ApiKey.DeleteTopics,
            { topicNames: [wireName(this.config, name)], timeoutMs: this.config.answerMsMax },
            { timeoutMs: this.config.answerMsMax },
          ),
      ),
    );
    let deleted = false;
    let missing: { errorCode: number; errorMessage: string | null } | undefined;
    for (const answer of answers) {
      const result = answer.responses.find((topic) => topic.name === wireName(this.config, name));
      if (result === undefined) {
        throw new TailbaseError(502, 'log_error', `DeleteTopics did not answer topic ${name}`);
      }
      if (result.errorCode === ErrorCode.NONE) deleted = true;
      else if (result.errorCode === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) missing = result;
      else
        throw logErrorOf(result.errorCode, result.errorMessage ?? null, {
          topic: wireName(this.config, name),
        });
    }
    if (!deleted && missing !== undefined) {
      throw logErrorOf(missing.errorCode, missing.errorMessage ?? null, {
        topic: wireName(this.config, name),
      });
    }
    await this.metadata.refresh();
  }

  /**
   * On a cluster without CreateTopics: a topic that exists, checked as far as Metadata says; one
   * that does not is `missing()` (ensureTopic's names what to create, setTopicConfigs' is 404).
   */
  private async ensureUnverified(
    name: string,
    configs: Partial<TopicConfigs>,
    missing: () => TailbaseError,
  ): Promise<TopicInfo> {
    const snapshot = await this.refreshed(name, missing);
    if (Object.values(configs).some((value) => value !== undefined)) {
      throw new TailbaseError(
        502,
        'log_unsupported',
        `the Kafka cluster has no IncrementalAlterConfigs: topic ${wireName(this.config, name)}'s configs cannot be set`,
        { topic: wireName(this.config, name) },
      );
    }
    return this.checkedInfo(snapshot, name);
  }

  /** The topic as a fresh Metadata and DescribeConfigs hold it, checked (topic-safety.ts). */
  private async describeOne(name: string, missing?: () => TailbaseError): Promise<TopicInfo> {
    return this.checkedInfo(await this.refreshed(name, missing), name);
  }

  /**
   * A fresh Metadata; when `missing` is given, a topic absent from it is that error rather than
   * whatever the check or the describe would make of it.
   */
  private async refreshed(name: string, missing?: () => TailbaseError): Promise<MetadataSnapshot> {
    const snapshot = await this.metadata.refresh();
    if (missing !== undefined && !snapshot.topics.has(name)) throw missing();
    return snapshot;
  }

  /** The topic as `snapshot` and DescribeConfigs hold it, checked (topic-safety.ts). */
  private async checkedInfo(snapshot: MetadataSnapshot, name: string): Promise<TopicInfo> {
    await this.checkTopics(snapshot, [name]);
    const [info] = await this.describe(snapshot, [name]);
    return info;
  }

  /** A missing topic where the cluster has no CreateTopics: what to create, and how. */
  private uncreatable(name: string): TailbaseError {
    return new TailbaseError(
      502,
      'topics_unverified',
      `topic ${wireName(this.config, name)} does not exist and the Kafka cluster has no CreateTopics: create it (replication factor ${this.config.safety.replicationFactor}, ${MIN_INSYNC_REPLICAS} ${this.config.safety.minInsyncReplicas})`,
      { topic: wireName(this.config, name) },
    );
  }

  /** The brokers a topic admin request goes to: every one Metadata names, else the bootstrap. */
  private brokersOf(snapshot: MetadataSnapshot): readonly BrokerAddress[] {
    return snapshot.brokers.size > 0 ? [...snapshot.brokers.values()] : this.config.bootstrap;
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

  /**
   * The partition's leader; a topic the cluster does not have is created first, unless this
   * client's appends create nothing (appendCreatesTopics): then 404 `unknown_topic`.
   */
  async leaderOrCreate(topic: string, partition: number): Promise<BrokerAddress> {
    const leader = await this.metadata.leader(topic, partition);
    if (leader !== null && !this.checkedTopics.has(topic)) {
      await this.checkTopics(await this.metadata.current(), [topic]);
    }
    if (leader !== null) return leader;
    if (!this.config.appendCreatesTopics) throw unknownTopic(topic, partition);
    await this.ensureTopic(topic);
    const created = await this.metadata.leader(topic, partition);
    if (created === null) throw unknownTopic(topic, partition);
    return created;
  }
}

/** IncrementalAlterConfigs' SET entries of the configs given. */
function configEntriesOf(given: Partial<TopicConfigs>): { name: string; value: string }[] {
  return (Object.keys(given) as (keyof TopicConfigs)[])
    .filter((field) => given[field] !== undefined)
    .map((field) => ({ name: TOPIC_CONFIG_NAMES[field], value: String(given[field]) }));
}

function unknownTopic(topic: string, partition: number): TailbaseError {
  return new TailbaseError(404, 'unknown_topic', `topic ${topic} has no partition ${partition}`, {
    topic,
    partition,
  });
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
