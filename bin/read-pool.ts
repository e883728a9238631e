/**
 * Starts a serve-node's read threads (read-worker.ts) and binds them, with the apply thread's
 * client, into one serve client (serve-node/read-pool-client.ts).
 */
import { availableParallelism } from 'node:os';
import { MessageChannel } from 'node:worker_threads';
import { ReadPoolClient } from '../serve-node/read-pool-client.js';
import { PortServeClient } from '../shared/port-serve-client.js';
import type { ServeClient } from '../shared/serve-api.js';
import { startNodeThread, type NodeThread } from './node-thread.js';
import type { ReadWorkerData } from './read-worker.js';

/** How long a read thread waits for the apply thread to name the stores at start. */
const HELLO_WAIT_MS_MAX = 30_000;

/** The default number of read threads: one a core. */
export function defaultReadThreads(): number {
  return availableParallelism();
}

export interface ReadPool {
  client: ServeClient;
  /** Stops the read threads (before the apply thread: they read its stores). */
  stop(): Promise<void>;
}

export async function startReadPool(
  count: number,
  channel: string,
  applier: ServeClient,
  onDeath: (error: Error) => void,
): Promise<ReadPool> {
  const threads: NodeThread[] = [];
  const clients: PortServeClient[] = [];
  const stop = async () => {
    await Promise.all(threads.map((thread) => thread.stop()));
    for (const client of clients) client.close(new Error('tailbase stopped'));
  };
  try {
    for (let i = 0; i < count; i++) {
      const serve = new MessageChannel();
      threads.push(
        await startNodeThread(
          `serve-node read thread ${i}`,
          new URL('./read-worker.js', import.meta.url),
          {
            channel,
            helloWaitMsMax: HELLO_WAIT_MS_MAX,
            servePort: serve.port2,
          } satisfies ReadWorkerData,
          [serve.port2],
          onDeath,
        ),
      );
      clients.push(new PortServeClient(serve.port1));
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { client: new ReadPoolClient(clients, applier), stop };
}
