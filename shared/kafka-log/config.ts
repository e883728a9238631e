/**
 * The Kafka log client's settings and limits, each named with its unit and defaulted here. Every
 * connection, in-flight request, response byte, retry and wait the client spends is bounded by
 * one of these.
 */
import { LOG_ANSWER_MS_MAX } from '../log-api.js';
import { createLogger, type Logger } from '../logger.js';
import { TOPIC_PREFIX_PATTERN } from '../topics.js';
import { topicSafetyDefaults, type TopicSafetyRules } from './topic-safety.js';

const MiB = 1024 * 1024;
/** Kafka keeps an idempotent producer's batches in order only with at most 5 requests in flight. */
const IDEMPOTENT_IN_FLIGHT_MAX = 5;

export interface KafkaLogLimits {
  /** How long opening a TCP connection to a broker may take before it counts as unreachable. */
  connectTimeoutMs: number;
  /**
   * How long a broker may take to answer beyond the wait it was asked for (a Fetch's maxWaitMs);
   * past it the connection is closed and its requests fail as `log_unreachable` (a hung broker is
   * as good as down). Produce requests are also bounded by their callers' signals.
   */
  answerMsMax: number;
  /** Requests sent on one connection and not yet answered; more wait for a slot. */
  inFlightRequestsMax: number;
  /** Connections a fetch may lease from one broker at once (a long poll holds one each). */
  fetchConnectionsPerBrokerMax: number;
  /** The largest answer frame a broker may send (past it the connection is closed). */
  responseBytesMax: number;
  /** A Fetch answer's bytes at most (Kafka's fetch.max.bytes). */
  fetchBytesMax: number;
  /** One partition's bytes in a Fetch answer when the caller names none (max.partition.fetch.bytes). */
  partitionFetchBytesDefault: number;
  /** The bytes of one Produce request (the batches of every partition in it together). */
  produceRequestBytesMax: number;
  /**
   * Produce requests out to one broker at once from one client (Kafka's
   * max.in.flight.requests.per.connection), at most IDEMPOTENT_IN_FLIGHT_MAX.
   */
  produceRequestsInFlightMax: number;
  /** The broker's own bound on a Produce's replication wait (acks=all), sent as its timeoutMs. */
  produceTimeoutMs: number;
  /**
   * Attempts of a request whose partition's leader moved or is unknown (NOT_LEADER_OR_FOLLOWER,
   * UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE): the metadata is refreshed before each
   * retry; past it the partition's error is the caller's.
   */
  leaderAttemptsMax: number;
  /** The pause before a retry after a leader error, times the attempt number. */
  leaderRetryBackoffMs: number;
  /** How long connect() keeps trying the bootstrap brokers before giving up. */
  bootstrapWaitMs: number;
  bootstrapRetryMs: number;
}

export const kafkaLogDefaults: KafkaLogLimits = {
  connectTimeoutMs: 5_000,
  answerMsMax: LOG_ANSWER_MS_MAX,
  inFlightRequestsMax: 16,
  fetchConnectionsPerBrokerMax: 8,
  responseBytesMax: 64 * MiB,
  fetchBytesMax: 16 * MiB,
  partitionFetchBytesDefault: 4 * MiB,
  produceRequestBytesMax: 16 * MiB,
  produceRequestsInFlightMax: 4,
  produceTimeoutMs: 30_000,
  leaderAttemptsMax: 5,
  leaderRetryBackoffMs: 100,
  bootstrapWaitMs: 30_000,
  bootstrapRetryMs: 250,
};

export interface KafkaSaslPlain {
  username: string;
  password: string;
}

/**
 * TLS to every broker (managed clusters): the server's certificate is verified against `ca` (PEM,
 * a private CA) or, without it, Node's bundled public CAs, and must name the broker's host.
 */
export interface KafkaTls {
  ca?: string;
}

export interface KafkaLogOptions extends Partial<KafkaLogLimits> {
  /** host:port of one or more brokers; the rest of the cluster is learned from Metadata. */
  bootstrap: readonly string[];
  /** Names this process in the brokers' logs. */
  clientId?: string;
  /** SASL/PLAIN credentials, when the brokers require them. */
  sasl?: KafkaSaslPlain;
  /** TLS on every broker connection; plain TCP without it. */
  tls?: KafkaTls;
  /**
   * The partition count of a new collection topic, when the cluster cannot say it: by default the
   * count of the collection topics that exist, else the brokers' `num.partitions`.
   */
  partitions?: number;
  /**
   * Put before every topic name tailbase uses, collections and internal topics alike, so several
   * tailbases (or other users) share one cluster: collection C is topic `topicPrefix + C`. Empty
   * by default; topics without it are not tailbase's.
   */
  topicPrefix?: string;
  /** Created with, and the least a topic may have (invariant 1); 3 by default. */
  replicationFactor?: number;
  /** Created with, and the least a topic may have (invariant 1); 2 by default. */
  minInsyncReplicas?: number;
  /**
   * Go on where the cluster cannot say its topics' settings (no DescribeConfigs or CreateTopics,
   * as librdkafka's mock cluster): said in the log at connect. Off by default: refused.
   */
  allowUnverifiedTopics?: boolean;
  /**
   * Whether an append to a topic the cluster lacks creates it first (the gateway's first write of
   * a collection). Off for the view processors: a view's topic is created once, when its version
   * is declared, and one that is gone was dropped or retired (its append is 404 unknown_topic).
   */
  appendCreatesTopics?: boolean;
  logger?: Logger;
}

export interface KafkaLogConfig extends KafkaLogLimits {
  bootstrap: readonly BrokerAddress[];
  clientId: string;
  sasl: KafkaSaslPlain | null;
  tls: KafkaTls | null;
  partitions: number | null;
  topicPrefix: string;
  safety: TopicSafetyRules;
  allowUnverifiedTopics: boolean;
  appendCreatesTopics: boolean;
  logger: Logger;
}

/** Kafka's longest topic name (249) less the longest collection name (64). */
export const TOPIC_PREFIX_CHARS_MAX = 185;

/** The prefix as given, checked: Kafka's topic characters, short enough for every collection. */
export function checkTopicPrefix(prefix: string): string {
  if (!TOPIC_PREFIX_PATTERN.test(prefix) || prefix.length > TOPIC_PREFIX_CHARS_MAX) {
    throw new Error(
      `a topic prefix is at most ${TOPIC_PREFIX_CHARS_MAX} of [a-zA-Z0-9._-], not ${JSON.stringify(prefix.slice(0, 200))}`,
    );
  }
  return prefix;
}

/** A topic's name on the wire: the topic prefix, then tailbase's name of it. */
export function wireName(config: KafkaLogConfig, topic: string): string {
  return config.topicPrefix + topic;
}

export interface BrokerAddress {
  host: string;
  port: number;
}

/** The options with their defaults, checked: a bad limit fails at start, not at first use. */
export function kafkaLogConfig(options: KafkaLogOptions): KafkaLogConfig {
  const limits = { ...kafkaLogDefaults };
  for (const name of Object.keys(limits) as (keyof KafkaLogLimits)[]) {
    const value = options[name];
    if (value === undefined) continue;
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new Error(`Kafka log client ${name} must be a positive integer, not ${String(value)}`);
    }
    limits[name] = value;
  }
  if (limits.produceRequestsInFlightMax > IDEMPOTENT_IN_FLIGHT_MAX) {
    throw new Error(
      `Kafka log client produceRequestsInFlightMax must be at most ${IDEMPOTENT_IN_FLIGHT_MAX} (an idempotent producer's bound), not ${limits.produceRequestsInFlightMax}`,
    );
  }
  if (options.bootstrap.length === 0)
    throw new Error('at least one Kafka bootstrap broker is needed');
  return {
    ...limits,
    bootstrap: options.bootstrap.map(parseBrokerAddress),
    clientId: options.clientId ?? 'tailbase',
    sasl: options.sasl ?? null,
    tls: options.tls ?? null,
    partitions: options.partitions ?? null,
    topicPrefix: checkTopicPrefix(options.topicPrefix ?? ''),
    safety: safetyRules(options),
    allowUnverifiedTopics: options.allowUnverifiedTopics ?? false,
    appendCreatesTopics: options.appendCreatesTopics ?? true,
    logger: options.logger ?? createLogger('kafka-log'),
  };
}

function safetyRules(options: KafkaLogOptions): TopicSafetyRules {
  const rules = {
    replicationFactor: options.replicationFactor ?? topicSafetyDefaults.replicationFactor,
    minInsyncReplicas: options.minInsyncReplicas ?? topicSafetyDefaults.minInsyncReplicas,
  };
  for (const [name, value] of Object.entries(rules)) {
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new Error(`Kafka topic ${name} must be a positive integer, not ${String(value)}`);
    }
  }
  if (rules.minInsyncReplicas > rules.replicationFactor) {
    throw new Error(
      `min.insync.replicas ${rules.minInsyncReplicas} is more than the replication factor ${rules.replicationFactor}: no write could be acknowledged`,
    );
  }
  return rules;
}

/** `host:port` (or `[v6]:port`) as an address; the port is required. */
export function parseBrokerAddress(text: string): BrokerAddress {
  const match = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(text.trim());
  const port = match ? Number(match[2]) : NaN;
  if (!match || port < 1 || port > 65_535) {
    throw new Error(`a Kafka broker is host:port, not ${JSON.stringify(text)}`);
  }
  return { host: match[1].replace(/^\[|\]$/g, ''), port };
}

const KAFKA_SCHEME = 'kafka://';

/**
 * The brokers of a `--log` that shared/log-connect.ts's checkLogUrls let through,
 * `kafka://host:port[,host:port...]`, which a comma-splitting flag parser hands over as
 * `kafka://host:port` and bare `host:port`s (a scheme on each is accepted too).
 */
export function kafkaBootstrapOf(urls: readonly string[]): string[] {
  return urls
    .flatMap((url) => url.split(','))
    .map((part) => part.trim().replace(KAFKA_SCHEME, '').replace(/\/+$/, ''))
    .filter((part) => part.length > 0);
}
