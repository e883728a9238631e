/**
 * The log-node of `tailbase start` on a thread of its own (embedded.ts starts it): its group
 * commits are acknowledged as soon as their write returns, not after whatever else a busier
 * thread's event loop is running. It answers the log contract on one port per caller: the
 * gateway's, the serve-node's and the view processors' (whose appends create no topic).
 */
import { workerData, type MessagePort } from 'node:worker_threads';
import { openLogNode, type KafkaFace } from '../log-node/index.js';
import { createLogger } from '../shared/logger.js';
import { answerLogPort } from '../shared/port-log-client.js';
import { runNodeWorker } from './node-thread.js';

export interface LogWorkerData {
  dataDir: string;
  /** Only when creating the log. */
  partitions?: number;
  /** One port per caller of the log contract. */
  ports: MessagePort[];
  /** The view processors' port: their appends create no topic (OpenLogNode.viewClient). */
  viewsPort: MessagePort;
  /** The Kafka listener, or null: none. */
  kafka: KafkaFace | null;
}

/** What the log thread tells the main thread once it started. */
export interface LogWorkerInfo {
  kafkaPort: number | null;
}

const data = workerData as LogWorkerData;
const logger = createLogger('tailbase').child({ role: 'log-node' });

await runNodeWorker(
  async () => {
    const log = await openLogNode({
      dataDir: data.dataDir,
      partitions: data.partitions,
      kafka: data.kafka,
      logger,
    });
    const failed = (error: unknown) => logger.error({ err: error }, 'a log call failed');
    for (const port of data.ports) answerLogPort(port, log.client, failed);
    answerLogPort(data.viewsPort, log.viewClient, failed);
    return log;
  },
  () => [...data.ports, data.viewsPort],
  (log): LogWorkerInfo => ({ kafkaPort: log.kafkaPort }),
);
