/**
 * The serve-node of `tailbase start` on a thread of its own (embedded.ts starts it): applying
 * (decoding, LMDB and FTS5 writes) and reads on their own core. It tails the log-node's thread
 * through `logPort` and answers the serve contract on `servePort`.
 */
import { workerData, type MessagePort } from 'node:worker_threads';
import { openServeNode } from '../serve-node/index.js';
import { createLogger } from '../shared/logger.js';
import { PortLogClient } from '../shared/port-log-client.js';
import { answerServePort } from '../shared/port-serve-client.js';
import { runNodeWorker } from './node-thread.js';

export interface ServeWorkerData {
  dataDir: string;
  logPort: MessagePort;
  servePort: MessagePort;
}

const data = workerData as ServeWorkerData;
const logger = createLogger('tailbase').child({ role: 'serve-node' });
const log = new PortLogClient(data.logPort);

await runNodeWorker(
  async () => {
    const serve = await openServeNode({ dataDir: data.dataDir, logger }, log);
    answerServePort(data.servePort, serve.client, (error) =>
      logger.error({ err: error }, 'a read failed'),
    );
    return {
      stop: async () => {
        await serve.stop();
        log.close(new Error('the serve-node stopped'));
      },
    };
  },
  () => [data.logPort, data.servePort],
);
