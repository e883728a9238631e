/**
 * A serve-node on a worker thread, for `tailbase start`: applying (decoding, LMDB and FTS5
 * writes) and reads run on their own core while the main thread serves HTTP and the log. The
 * worker (serve-worker.ts) tails the log through a port answered here by `log`, and `client`
 * reaches it through another, both with the same contracts a cluster reaches over the network.
 */
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import type { LogClient } from '../shared/log-api.js';
import type { Logger } from '../shared/logger.js';
import { answerLogPort } from '../shared/port-log-client.js';
import { PortServeClient } from '../shared/port-serve-client.js';
import type { ServeClient } from '../shared/serve-api.js';
import type { ServeNodeOptions } from './index.js';

export type ServeWorkerOptions = Omit<
  ServeNodeOptions,
  'logUrls' | 'host' | 'port' | 'logger' | 'clusterSecret' | 'logConnectMsMax'
>;

export interface ServeWorkerData {
  options: ServeWorkerOptions;
  logPort: MessagePort;
  servePort: MessagePort;
  /** The worker's logger is `tailbase` with these bindings. */
  bindings: Record<string, string>;
}

/** What the worker tells the main thread. */
export type ServeThreadMessage =
  { started: { nodeId: string } } | { stopped: true } | { failed: string };

export interface ServeThread {
  nodeId: string;
  client: ServeClient;
  /** Stops applying, closes the stores, and ends the thread. */
  stop(): Promise<void>;
}

export async function startServeThread(
  options: ServeWorkerOptions,
  log: LogClient,
  logger: Logger,
  /** The thread died outside stop(): the serve-node is gone. */
  onDeath: (error: Error) => void,
): Promise<ServeThread> {
  const logChannel = new MessageChannel();
  const serveChannel = new MessageChannel();
  answerLogPort(logChannel.port1, log, (error) =>
    logger.error({ err: error }, 'a log call from the serve-node failed'),
  );
  const worker = new Worker(new URL('./serve-worker.js', import.meta.url), {
    workerData: {
      options,
      logPort: logChannel.port2,
      servePort: serveChannel.port2,
      bindings: { role: 'serve-node' },
    } satisfies ServeWorkerData,
    transferList: [logChannel.port2, serveChannel.port2],
  });
  const client = new PortServeClient(serveChannel.port1);
  let stopping = false;
  const closePorts = (error: Error) => {
    client.close(error);
    logChannel.port1.close();
    serveChannel.port1.close();
  };
  const next = () =>
    new Promise<ServeThreadMessage>((resolve, reject) => {
      const onError = (error: Error) => {
        worker.off('message', resolve);
        reject(error);
      };
      worker.once('message', (message: ServeThreadMessage) => {
        worker.off('error', onError);
        resolve(message);
      });
      worker.once('error', onError);
    });
  worker.on('exit', (code) => {
    if (stopping) return;
    const error = new Error(`the serve-node thread exited (code ${code})`);
    closePorts(error);
    onDeath(error);
  });
  const first = await next().catch((error: Error) => ({ failed: error.message }));
  if (!('started' in first)) {
    stopping = true;
    closePorts(new Error('the serve-node did not start'));
    await worker.terminate();
    throw new Error(`the serve-node did not start: ${'failed' in first ? first.failed : ''}`);
  }
  let stopped: Promise<void> | null = null;
  return {
    nodeId: first.started.nodeId,
    client,
    stop: () => {
      stopped ??= (async () => {
        stopping = true;
        const answer = next();
        worker.postMessage('stop');
        const message = await answer.catch((error: Error) => ({ failed: error.message }));
        closePorts(new Error('the serve-node stopped'));
        await worker.terminate();
        if ('failed' in message) throw new Error(`the serve-node stopped badly: ${message.failed}`);
      })();
      return stopped;
    },
  };
}
