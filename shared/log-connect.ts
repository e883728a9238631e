/**
 * The log a gateway or serve-node is pointed at by `--log`: `kafka://host:port[,host:port...]`,
 * reached by the Kafka protocol (shared/kafka-log), whether the brokers are tailbase log-nodes or
 * Kafka. `close` ends the connections it opened.
 */
import { TailbaseError } from './errors.js';
import {
  KafkaLogClient,
  kafkaBootstrapOf,
  type KafkaSaslPlain,
  type KafkaTls,
} from './kafka-log/index.js';
import type { LogClient } from './log-api.js';
import type { Logger } from './logger.js';

export interface ConnectedLog {
  log: LogClient;
  close(): void;
}

/** How a kafka:// log is reached and its topics named (`--kafka-*` and `--topic-prefix`). */
export interface KafkaConnectOptions {
  /** SASL/PLAIN for brokers that require it. */
  sasl?: KafkaSaslPlain;
  /** TLS to every broker, verified against `ca` or Node's public CAs. */
  tls?: KafkaTls;
  /** Before every topic name (a cluster shared with others); empty: none. */
  topicPrefix?: string;
  /** The partition count of new collection topics, when the cluster cannot say it. */
  partitions?: number;
  /** Topics are created with these and refused with less (invariant 1): 3 and 2 by default. */
  replicationFactor?: number;
  minInsyncReplicas?: number;
  /** Go on where the cluster cannot say its topics' settings (said in the log at connect). */
  allowUnverifiedTopics?: boolean;
  /** Whether an append to a missing topic creates it (KafkaLogOptions.appendCreatesTopics). */
  appendCreatesTopics?: boolean;
}

export interface ConnectLogOptions {
  /** How long connecting keeps retrying brokers that are not up yet, and how often. */
  connectWaitMs?: number;
  connectRetryMs?: number;
  /** How long a broker may take to answer beyond the wait a call asked for. */
  answerMsMax?: number;
  /** Bytes of one Produce request (the appends of several partitions sent together). */
  appendRequestBytesMax?: number;
  kafka?: KafkaConnectOptions;
  /** Where the Kafka client says what it could not check of the cluster. */
  logger?: Logger;
}

/**
 * `--log`'s URLs, refused unless they name Kafka brokers: `kafka://host:port`, then more
 * `host:port` or `kafka://host:port`. The internal HTTP log API is gone, so an `http://` log-node
 * URL is an error that says where its Kafka listener is instead.
 */
export function checkLogUrls(urls: readonly string[]): readonly string[] {
  const foreign = urls.find(
    (url, i) => (i === 0 || url.includes('://')) && !url.startsWith('kafka://'),
  );
  if (urls.length === 0 || foreign !== undefined) {
    throw new TailbaseError(
      400,
      'invalid_log_url',
      `--log names the log's Kafka brokers, kafka://host:port[,host:port...], not ` +
        `${foreign ?? 'nothing'}: a tailbase log-node's Kafka listener is its --kafka-port ` +
        `(9092 by default); the internal HTTP log API is gone`,
    );
  }
  return urls;
}

export async function connectLog(
  urls: readonly string[],
  options: ConnectLogOptions,
): Promise<ConnectedLog & { log: KafkaLogClient }> {
  const bootstrap = kafkaBootstrapOf(checkLogUrls(urls));
  const log = await KafkaLogClient.connect({
    bootstrap,
    bootstrapWaitMs: options.connectWaitMs,
    bootstrapRetryMs: options.connectRetryMs,
    answerMsMax: options.answerMsMax,
    produceRequestBytesMax: options.appendRequestBytesMax,
    sasl: options.kafka?.sasl,
    tls: options.kafka?.tls,
    topicPrefix: options.kafka?.topicPrefix,
    partitions: options.kafka?.partitions,
    replicationFactor: options.kafka?.replicationFactor,
    minInsyncReplicas: options.kafka?.minInsyncReplicas,
    allowUnverifiedTopics: options.kafka?.allowUnverifiedTopics,
    appendCreatesTopics: options.kafka?.appendCreatesTopics,
    logger: options.logger,
  });
  return { log, close: () => log.close() };
}
