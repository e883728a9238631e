/**
 * The log a gateway or serve-node is pointed at by `--log`: `kafka://host:port[,host:port...]`
 * reaches it by the Kafka protocol (shared/kafka-log), one or more `http://` log-node URLs by
 * the internal HTTP API (shared/log-cluster.ts). `close` ends the connections it opened.
 */
import {
  KafkaLogClient,
  kafkaBootstrapOf,
  type KafkaSaslPlain,
  type KafkaTls,
} from './kafka-log/index.js';
import type { LogClient } from './log-api.js';
import { LogCluster, type LogClusterOptions } from './log-cluster.js';
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
}

export interface ConnectLogOptions extends LogClusterOptions {
  kafka?: KafkaConnectOptions;
  /** Where the Kafka client says what it could not check of the cluster. */
  logger?: Logger;
}

export async function connectLog(
  urls: readonly string[],
  options: ConnectLogOptions,
): Promise<ConnectedLog> {
  const bootstrap = kafkaBootstrapOf(urls);
  if (bootstrap === null) {
    if (urls.some((url) => url.startsWith('kafka://'))) {
      throw new Error(
        `--log names kafka:// brokers or http:// log-nodes, not both: ${urls.join(',')}`,
      );
    }
    if (options.kafka?.topicPrefix) {
      throw new Error(`a topic prefix needs --log kafka://, not ${urls.join(',')}`);
    }
    if (options.kafka?.tls)
      throw new Error(`--kafka-tls needs --log kafka://, not ${urls.join(',')}`);
    return { log: await LogCluster.connect(urls, options), close: () => undefined };
  }
  const log = await KafkaLogClient.connect({
    bootstrap,
    bootstrapWaitMs: options.connectWaitMs,
    bootstrapRetryMs: options.connectRetryMs,
    answerMsMax: options.answerMsMax,
    sasl: options.kafka?.sasl,
    tls: options.kafka?.tls,
    topicPrefix: options.kafka?.topicPrefix,
    partitions: options.kafka?.partitions,
    replicationFactor: options.kafka?.replicationFactor,
    minInsyncReplicas: options.kafka?.minInsyncReplicas,
    allowUnverifiedTopics: options.kafka?.allowUnverifiedTopics,
    logger: options.logger,
  });
  return { log, close: () => log.close() };
}
