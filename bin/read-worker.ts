/**
 * A read thread of the serve-node (serve-node/read-node.ts): started beside the apply thread
 * (serve-worker.ts), it answers reads on `servePort` from its own handles on the same stores.
 */
import { workerData, type MessagePort } from 'node:worker_threads';
import { LocalServeClient, ReadNode } from '../serve-node/index.js';
import { createLogger } from '../shared/logger.js';
import { answerServePort } from '../shared/port-serve-client.js';
import { runNodeWorker } from './node-thread.js';

export interface ReadWorkerData {
  /** The serve-node's read channel (serve-node/read-threads.ts). */
  channel: string;
  /** How long to wait for the apply thread to name its stores. */
  helloWaitMsMax: number;
  servePort: MessagePort;
}

const data = workerData as ReadWorkerData;
const logger = createLogger('tailbase').child({ role: 'serve-node-reads' });

await runNodeWorker(
  async () => {
    const node = await ReadNode.open(data.channel, data.helloWaitMsMax, (error) =>
      logger.error({ err: error }, 'the read handles of a rebuild'),
    );
    answerServePort(
      data.servePort,
      new LocalServeClient(node, (error) => logger.error({ err: error }, 'rebuild failed')),
      (error) => logger.error({ err: error }, 'a read failed'),
    );
    return node;
  },
  () => [data.servePort],
);
