/**
 * A node of `tailbase start` on a worker thread of its own: the main-thread side starts the
 * worker and waits for it to say it started; the worker side (runNodeWorker) opens the node and
 * stops it when asked. The protocol is three messages: started, stopped, failed.
 */
import { parentPort, Worker, type MessagePort, type Transferable } from 'node:worker_threads';
import { connectLog, type ConnectedLog, type ConnectLogOptions } from '../shared/log-connect.js';
import { flushLogs, type Logger } from '../shared/logger.js';
import { PortLogClient } from '../shared/port-log-client.js';

type NodeThreadMessage = { started: true; info: unknown } | { stopped: true } | { failed: string };

export interface NodeThread {
  /** What the node told of itself once it started (runNodeWorker's `info`). */
  info: unknown;
  /** Stops the node (it answers what it took first) and ends the thread. */
  stop(): Promise<void>;
}

export async function startNodeThread(
  name: string,
  entry: URL,
  workerData: unknown,
  transferList: Transferable[],
  /** The thread died outside stop(). */
  onDeath: (error: Error) => void,
): Promise<NodeThread> {
  const worker = new Worker(entry, { workerData, transferList });
  let stopping = false;
  /** The worker's next message; an error of the thread fails it. */
  const next = () =>
    new Promise<NodeThreadMessage>((resolve, reject) => {
      const onMessage = (message: NodeThreadMessage) => {
        worker.off('error', onError);
        resolve(message);
      };
      const onError = (error: Error) => {
        worker.off('message', onMessage);
        reject(error);
      };
      worker.once('message', onMessage);
      worker.once('error', onError);
    });
  worker.on('exit', (code) => {
    if (!stopping) onDeath(new Error(`the ${name} thread exited (code ${code})`));
  });
  const first = await next().catch((error: Error) => ({ failed: error.message }));
  if (!('started' in first)) {
    stopping = true;
    await worker.terminate();
    throw new Error(`the ${name} did not start: ${'failed' in first ? first.failed : ''}`);
  }
  let stopped: Promise<void> | null = null;
  return {
    info: first.info,
    stop: () => {
      stopped ??= (async () => {
        stopping = true;
        const answer = next();
        worker.postMessage('stop');
        const message = await answer.catch((error: Error) => ({ failed: error.message }));
        await worker.terminate();
        if ('failed' in message) throw new Error(`the ${name} stopped badly: ${message.failed}`);
      })();
      return stopped;
    },
  };
}

/**
 * The worker side: opens the node, says it started, and on the one message the main thread
 * sends (stop) stops it, closes `ports`, and says so.
 */
export async function runNodeWorker<Node extends { stop(): Promise<void> }>(
  open: () => Promise<Node>,
  ports: () => MessagePort[],
  /** What the main thread is told of the node once it started (it must be cloneable). */
  info: (node: Node) => unknown = () => null,
): Promise<void> {
  const port = parentPort as MessagePort;
  const tell = (message: NodeThreadMessage) => port.postMessage(message);
  try {
    const node = await open();
    port.once('message', () => {
      void node.stop().then(
        () => {
          for (const each of ports()) each.close();
          // The main thread terminates this one on the answer: lines still buffered in this
          // thread's log destination (the node's last, "closed") would be lost with it.
          flushLogs();
          tell({ stopped: true });
        },
        (error: unknown) => {
          flushLogs();
          tell({ failed: String(error) });
        },
      );
    });
    tell({ started: true, info: info(node) });
  } catch (error) {
    tell({ failed: error instanceof Error ? error.message : String(error) });
  }
}

/**
 * How a node thread reaches the log: the log-node thread's port, or the external log's URLs and
 * how to reach it (`--log`).
 */
export type WorkerLog = { port: MessagePort } | { urls: string[]; options: ConnectLogOptions };

/** The ports `log` carries: what the main thread transfers to the worker and the worker closes. */
export function portsOf(log: WorkerLog): MessagePort[] {
  return 'port' in log ? [log.port] : [];
}

/** Connects the worker to its log; closing a port's client fails its calls with `stoppedMessage`. */
export async function connectWorkerLog(
  log: WorkerLog,
  logger: Logger,
  stoppedMessage: string,
): Promise<ConnectedLog> {
  if ('urls' in log) return connectLog(log.urls, { ...log.options, logger });
  const client = new PortLogClient(log.port);
  return { log: client, close: () => client.close(new Error(stoppedMessage)) };
}
