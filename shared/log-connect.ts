/**
 * The log a gateway or serve-node is pointed at by `--log`: `kafka://host:port[,host:port...]`
 * reaches it by the Kafka protocol (shared/kafka-log), one or more `http://` log-node URLs by
 * the internal HTTP API (shared/log-cluster.ts). `close` ends the connections it opened.
 */
import { KafkaLogClient, kafkaBootstrapOf, type KafkaSaslPlain } from './kafka-log/index.js';
import type { LogClient } from './log-api.js';
import { LogCluster, type LogClusterOptions } from './log-cluster.js';

export interface ConnectedLog {
  log: LogClient;
  close(): void;
}

/** How a kafka:// log is reached and its topics named (`--kafka-*` and `--topic-prefix`). */
export interface KafkaConnectOptions {
  /** SASL/PLAIN for brokers that require it. */
  sasl?: KafkaSaslPlain;
  /** Before every topic name (a cluster shared with others); empty: none. */
  topicPrefix?: string;
  /** The partition count of new collection topics, when the cluster cannot say it. */
  partitions?: number;
}

export interface ConnectLogOptions extends LogClusterOptions {
  kafka?: KafkaConnectOptions;
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
    return { log: await LogCluster.connect(urls, options), close: () => undefined };
  }
  const log = await KafkaLogClient.connect({
    bootstrap,
    bootstrapWaitMs: options.connectWaitMs,
    bootstrapRetryMs: options.connectRetryMs,
    answerMsMax: options.answerMsMax,
    sasl: options.kafka?.sasl,
    topicPrefix: options.kafka?.topicPrefix,
    partitions: options.kafka?.partitions,
  });
  return { log, close: () => log.close() };
}
