/**
 * The entry of a serve-node's worker thread (serve-thread.ts starts it): the serve-node of
 * `tailbase start`, applying the log and answering reads on a core of its own. It tails the log
 * through `logPort` and answers the serve contract on `servePort`.
 */
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { createLogger } from '../shared/logger.js';
import { PortLogClient } from '../shared/port-log-client.js';
import { answerServePort } from '../shared/port-serve-client.js';
import { openServeNode } from './index.js';
import type { ServeThreadMessage, ServeWorkerData } from './serve-thread.js';

const data = workerData as ServeWorkerData;
const port = parentPort as MessagePort;
const logger = createLogger('tailbase').child(data.bindings);
const log = new PortLogClient(data.logPort);
const tell = (message: ServeThreadMessage) => port.postMessage(message);

try {
  const serve = await openServeNode({ ...data.options, logger }, log);
  answerServePort(data.servePort, serve.client, (error) =>
    logger.error({ err: error }, 'a read failed'),
  );
  port.once('message', () => {
    // The only message the main thread sends: stop. The stores close before it is answered.
    void serve.stop().then(
      () => {
        log.close(new Error('the serve-node stopped'));
        data.logPort.close();
        data.servePort.close();
        tell({ stopped: true });
      },
      (error: unknown) => tell({ failed: String(error) }),
    );
  });
  tell({ started: { nodeId: serve.nodeId } });
} catch (error) {
  tell({ failed: error instanceof Error ? error.message : String(error) });
}
