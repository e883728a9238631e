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

export interface ConnectLogOptions extends LogClusterOptions {
  /** SASL/PLAIN for kafka:// brokers that require it. */
  kafkaSasl?: KafkaSaslPlain;
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
    return { log: await LogCluster.connect(urls, options), close: () => undefined };
  }
  const log = await KafkaLogClient.connect({
    bootstrap,
    bootstrapWaitMs: options.connectWaitMs,
    bootstrapRetryMs: options.connectRetryMs,
    answerMsMax: options.answerMsMax,
    sasl: options.kafkaSasl,
  });
  return { log, close: () => log.close() };
}
