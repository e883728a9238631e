/**
 * Starts a serve-node's read threads (read-worker.ts) and binds them, with the apply thread's
 * client, into one serve client (serve-node/read-pool-client.ts).
 */
import { availableParallelism } from 'node:os';
import { MessageChannel } from 'node:worker_threads';
import { LocalServeClient, ReadNode, ReadPoolClient } from '../serve-node/index.js';
import { PortServeClient } from '../shared/port-serve-client.js';
import type { Logger } from '../shared/logger.js';
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
  /** The reader on this thread, when asked for. */
  here: ReadNode | null;
  /** Stops the read threads (before the apply thread: they read its stores). */
  stop(): Promise<void>;
}

/**
 * `count` read threads, and with `keyReadsHere` a reader on this thread too, which answers key
 * reads with no hop to another thread (and every read when there are no read threads).
 */
export async function startReadPool({
  count,
  channel,
  applier,
  onDeath,
  keyReadsHere,
  scanHereLimitMax = 0,
  logger,
}: {
  count: number;
  /** The serve-node's read channel (serve-node/read-threads.ts). */
  channel: string;
  applier: ServeClient;
  /** A read thread died outside stop(). */
  onDeath: (error: Error) => void;
  keyReadsHere: boolean;
  /** With `keyReadsHere`: scans in key order of at most this many documents are answered here too. */
  scanHereLimitMax?: number;
  logger: Logger;
}): Promise<ReadPool> {
  const threads: NodeThread[] = [];
  const clients: PortServeClient[] = [];
  let here: ReadNode | null = null;
  const stop = async () => {
    await here?.stop();
    await Promise.all(threads.map((thread) => thread.stop()));
    for (const client of clients) client.close(new Error('tailbase stopped'));
  };
  try {
    if (keyReadsHere) {
      here = await ReadNode.open(channel, HELLO_WAIT_MS_MAX, (error) =>
        logger.error({ err: error }, 'the read handles of a rebuild'),
      );
    }
    // Together: each thread loads the modules and opens the stores, which one after another
    // would add to the node's start.
    const started = await Promise.allSettled(
      Array.from({ length: count }, async (_, i) => {
        const serve = new MessageChannel();
        const thread = await startNodeThread(
          `serve-node read thread ${i}`,
          new URL('./read-worker.js', import.meta.url),
          {
            channel,
            helloWaitMsMax: HELLO_WAIT_MS_MAX,
            servePort: serve.port2,
          } satisfies ReadWorkerData,
          [serve.port2],
          onDeath,
        );
        threads.push(thread);
        clients.push(new PortServeClient(serve.port1));
      }),
    );
    const failed = started.find((result) => result.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
  } catch (error) {
    await stop();
    throw error;
  }
  const keyReader = here === null ? null : new LocalServeClient(here, () => undefined);
  const readers = clients.length > 0 || keyReader === null ? clients : [keyReader];
  return { client: new ReadPoolClient(readers, applier, keyReader, scanHereLimitMax), here, stop };
}
