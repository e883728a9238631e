/**
 * `tailbase serve-node` as one process of several threads, split as `tailbase start` splits its
 * serve-node: the apply loop on a thread of its own (serve-worker.ts), scans and searches on
 * `--read-threads` read threads (read-worker.ts), and the HTTP routes on the main thread, which
 * answers key reads itself from read handles of its own, with no hop, and asks the apply thread
 * for status, readiness, rebuilds and snapshots.
 */
import path from 'node:path';
import { MessageChannel } from 'node:worker_threads';
import {
  createServeNodeApp,
  DEFAULT_HOST,
  rangeReadsOn,
  readChannelName,
} from '../serve-node/index.js';
import type { ThreadedServeNodeStart } from '../serve-node/main.js';
import { listen } from '../shared/http-server.js';
import { createLogger, flushLogs } from '../shared/logger.js';
import { PortServeClient } from '../shared/port-serve-client.js';
import { startNodeThread } from './node-thread.js';
import { startReadPool } from './read-pool.js';
import type { ServeWorkerData } from './serve-worker.js';

/** How long start waits for the log to answer before giving up, as startServeNode does. */
const LOG_CONNECT_MS_MAX = 30_000;

export const startThreadedServeNode: ThreadedServeNodeStart = async (options) => {
  const logger = options.logger ?? createLogger('serve-node');
  const onDeath = (error: Error) => {
    logger.fatal({ err: error }, 'a serve-node thread died; exiting');
    flushLogs();
    process.exit(1);
  };
  if (options.logUrls.length === 0) throw new Error('a serve-node needs at least one log URL');
  const channel = readChannelName(path.resolve(options.dataDir));
  const serve = new MessageChannel();
  const applyThread = await startNodeThread(
    'serve-node',
    new URL('./serve-worker.js', import.meta.url),
    {
      dataDir: options.dataDir,
      log: {
        urls: options.logUrls,
        options: {
          kafka: options.kafka,
          connectWaitMs: options.logConnectMsMax ?? LOG_CONNECT_MS_MAX,
        },
      },
      servePort: serve.port2,
      readChannel: channel,
      node: {
        partitions: options.partitions,
        limits: options.limits,
        fromSnapshot: options.fromSnapshot,
        clusterSecret: options.clusterSecret,
      },
      loggerName: 'serve-node',
      applyThreadNice: options.applyThreadNice,
    } satisfies ServeWorkerData,
    [serve.port2],
    onDeath,
  );
  const applier = new PortServeClient(serve.port1);
  const stopApply = async () => {
    await applyThread.stop();
    applier.close(new Error('the serve-node stopped'));
    serve.port1.close();
  };
  const pool = await startReadPool({
    count: options.readThreads,
    channel,
    applier,
    onDeath,
    keyReadsHere: true,
    logger,
  }).catch(async (error: unknown) => {
    await stopApply();
    throw error;
  });
  const here = pool.here!;
  const stopNodes = async () => {
    await pool.stop();
    await stopApply();
  };
  try {
    const listener = await listen(
      createServeNodeApp(
        {
          hosted: here.hosted,
          limits: here.limits,
          clusterSecret: options.clusterSecret,
          waiters: here.waiters,
          replica: () => here.replica(),
          applied: (collection) => here.applied(collection),
          tails: (collection) => here.tails(collection),
          status: () => applier.status(),
          ready: () => applier.ready(),
          rebuild: () => applier.rebuild(),
          dropCollection: (collection) => applier.dropCollection(collection),
          snapshot: (dir) => applier.snapshot(dir),
          ...(options.readThreads > 0 ? { rangeReads: rangeReadsOn(pool.client) } : {}),
        },
        logger,
      ),
      options.host ?? DEFAULT_HOST,
      options.port ?? 0,
    );
    logger.info({ url: listener.url, readThreads: options.readThreads }, 'serve-node ready');
    let stopping: Promise<void> | null = null;
    return {
      url: listener.url,
      stop: () => {
        stopping ??= listener.close(stopNodes);
        return stopping;
      },
    };
  } catch (error) {
    await stopNodes();
    throw error;
  }
};
