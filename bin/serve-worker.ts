/**
 * The serve-node of `tailbase start` on a thread of its own (embedded.ts starts it): applying
 * (decoding, LMDB and FTS5 writes) on its own core. It tails the log-node's thread through
 * `log.port`, or an external log it connects to itself (`--log`), and answers the serve contract
 * on `servePort`; with `readChannel`, read threads (read-worker.ts) answer the reads and this
 * thread tells them of each commit (serve-node/read-threads.ts).
 */
import { workerData, type MessagePort } from 'node:worker_threads';
import { openServeNode, ReadThreadsHub, type ServeNodeOptions } from '../serve-node/index.js';
import { createLogger } from '../shared/logger.js';
import { answerServePort } from '../shared/port-serve-client.js';
import { connectWorkerLog, portsOf, runNodeWorker, type WorkerLog } from './node-thread.js';
import { niceThisThread } from './thread-nice.js';

export interface ServeWorkerData {
  dataDir: string;
  /** The log-node thread's port, or the external log's URLs and how to reach it. */
  log: WorkerLog;
  servePort: MessagePort;
  /** The read threads' channel (serve-node/read-threads.ts), when reads run on threads of their own. */
  readChannel?: string;
  /** The serve-node's own options, for the standalone process (serve-node-threads.ts). */
  node?: Pick<ServeNodeOptions, 'partitions' | 'limits' | 'fromSnapshot' | 'clusterSecret'>;
  /** The name its log lines carry. */
  loggerName?: string;
  /** Nice levels this thread takes below the process's (thread-nice.ts); absent: none. */
  applyThreadNice?: number;
}

const data = workerData as ServeWorkerData;
const logger = createLogger(data.loggerName ?? 'tailbase').child({ role: 'serve-node' });

await runNodeWorker(
  async () => {
    const nice = niceThisThread(data.applyThreadNice ?? 0);
    if (nice !== null) logger.info({ nice }, 'the apply thread runs at a lower priority');
    const log = await connectWorkerLog(data.log, logger, 'the serve-node stopped');
    const serve = await openServeNode(
      { ...data.node, dataDir: data.dataDir, logger },
      log.log,
    ).catch((error: unknown) => {
      log.close();
      throw error;
    });
    answerServePort(data.servePort, serve.client, (error) =>
      logger.error({ err: error }, 'a read failed'),
    );
    const hub =
      data.readChannel === undefined ? null : new ReadThreadsHub(data.readChannel, serve.node);
    return {
      stop: async () => {
        hub?.close();
        await serve.stop();
        log.close();
      },
    };
  },
  () => [...portsOf(data.log), data.servePort],
);
