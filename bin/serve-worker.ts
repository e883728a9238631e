/**
 * The serve-node of `tailbase start` on a thread of its own (embedded.ts starts it): applying
 * (decoding, LMDB and FTS5 writes) and reads on their own core. It tails the log-node's thread
 * through `log.port`, or an external log it connects to itself (`--log`), and answers the serve
 * contract on `servePort`.
 */
import { workerData, type MessagePort } from 'node:worker_threads';
import { openServeNode } from '../serve-node/index.js';
import { connectLog, type ConnectedLog, type ConnectLogOptions } from '../shared/log-connect.js';
import { createLogger } from '../shared/logger.js';
import { PortLogClient } from '../shared/port-log-client.js';
import { answerServePort } from '../shared/port-serve-client.js';
import { runNodeWorker } from './node-thread.js';

export interface ServeWorkerData {
  dataDir: string;
  /** The log-node thread's port, or the external log's URLs and how to reach it. */
  log: { port: MessagePort } | { urls: string[]; options: ConnectLogOptions };
  servePort: MessagePort;
}

const data = workerData as ServeWorkerData;
const logger = createLogger('tailbase').child({ role: 'serve-node' });

async function connected(): Promise<ConnectedLog> {
  if ('urls' in data.log) return connectLog(data.log.urls, { ...data.log.options, logger });
  const log = new PortLogClient(data.log.port);
  return { log, close: () => log.close(new Error('the serve-node stopped')) };
}

await runNodeWorker(
  async () => {
    const log = await connected();
    const serve = await openServeNode({ dataDir: data.dataDir, logger }, log.log).catch(
      (error: unknown) => {
        log.close();
        throw error;
      },
    );
    answerServePort(data.servePort, serve.client, (error) =>
      logger.error({ err: error }, 'a read failed'),
    );
    return {
      stop: async () => {
        await serve.stop();
        log.close();
      },
    };
  },
  () => ('port' in data.log ? [data.log.port, data.servePort] : [data.servePort]),
);
