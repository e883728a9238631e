/**
 * A spawned log-node's Kafka face: a listener port chosen once, so a restarted node keeps it, and
 * KafkaLogClients of it that log nothing (a test's own checks say what went wrong).
 */
import { KafkaLogClient, type KafkaLogOptions } from '../../shared/kafka-log/index.js';
import { createLogger } from '../../shared/logger.js';
import { freePort } from './free-port.js';

export interface KafkaFace {
  /** `--kafka-port <port>`, for the log-node's arguments. */
  args: string[];
  broker: string;
  /** The log as `--log` names it: `kafka://<broker>`. */
  url: string;
  connect(options?: Partial<KafkaLogOptions>): Promise<KafkaLogClient>;
}

export async function kafkaFace(): Promise<KafkaFace> {
  const port = await freePort();
  const broker = `127.0.0.1:${port}`;
  return {
    args: ['--kafka-port', String(port)],
    broker,
    url: `kafka://${broker}`,
    connect: (options = {}) =>
      KafkaLogClient.connect({
        bootstrap: [broker],
        logger: createLogger('kafka-log', 'silent'),
        ...options,
      }),
  };
}
