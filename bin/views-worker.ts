/**
 * The view processors of `tailbase start` on a thread of their own (embedded.ts starts it): their
 * fetches, decoding, arithmetic and LMDB writes take this thread, not the HTTP edge's, which
 * bounds the write rate (with one view on the main thread, the edge's busy µs a PUT went from
 * 165 to 220-300, bench/views-profile.ts). It tails the log-node's thread through `log.port`, or
 * an external log it connects to itself (`--log`), and answers the gateway through `calls`, `told`
 * and `progress` (shared/port-view-client.ts).
 */
import { workerData, type MessagePort } from 'node:worker_threads';
import { createLogger } from '../shared/logger.js';
import { answerViewPort } from '../shared/port-view-client.js';
import { ViewHost } from '../views/view-host.js';
import { standalonePlacementTelling } from '../views/view-placement.js';
import type { ViewTaskLimits } from '../views/view-task.js';
import { connectWorkerLog, portsOf, runNodeWorker, type WorkerLog } from './node-thread.js';

export interface ViewsWorkerData {
  /** Where the views' state directories live. */
  dataDir: string;
  /**
   * The log-node thread's port, or the external log's URLs and how to reach it (`options.kafka`
   * the view writer's: viewWriterKafka).
   */
  log: WorkerLog;
  /** The gateway's calls to the processors. */
  calls: MessagePort;
  /** The processors' calls to the gateway: whether a topic is served. */
  told: MessagePort;
  /** The processors' progress, told one way to the gateway. */
  progress: MessagePort;
  limits?: Partial<ViewTaskLimits>;
}

const data = workerData as ViewsWorkerData;
const logger = createLogger('tailbase').child({ role: 'views' });

await runNodeWorker(
  async () => {
    const log = await connectWorkerLog(data.log, logger, 'the view processors stopped');
    let host: ViewHost | null = null;
    const gateway = answerViewPort(
      data.calls,
      data.told,
      data.progress,
      () => host!,
      (error) => logger.error({ err: error }, 'a view call failed'),
    );
    host = await ViewHost.start({
      log: log.log,
      dataDir: data.dataDir,
      logger,
      limits: data.limits,
      servedThrough: (topic, offsets) => gateway.servedThrough(topic, offsets),
      // A task may publish before start() answers (a start that deletes retired topics first):
      // tellAll() below covers it.
      placement: standalonePlacementTelling((key) => {
        if (host !== null) gateway.published(key);
      }),
      reconciled: () => {
        if (host !== null) gateway.tellAll();
      },
    }).catch((error: unknown) => {
      log.close();
      throw error;
    });
    gateway.tellAll();
    return {
      stop: async () => {
        await host!.stop();
        log.close();
      },
    };
  },
  () => [...portsOf(data.log), data.calls, data.told, data.progress],
);
