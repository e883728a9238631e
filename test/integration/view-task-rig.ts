/**
 * View tasks (views/view-task.ts) over an in-process log-node, for tests that drive one task's
 * rounds through a log whose answers they shape: a grouping of a collection source, its state in
 * a temporary directory, every task started here stopped by close().
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { openLogNode, type LogNodeOptions, type OpenLogNode } from '../../log-node/index.js';
import { encodeBatch } from '../../shared/batch-codec.js';
import type { LogClient } from '../../shared/log-api.js';
import { partitionFor } from '../../shared/partitioner.js';
import { parseViewDefinition, type ViewDefinition } from '../../shared/view-definition.js';
import { claimHeaders, claimKey } from '../../shared/view-epoch.js';
import {
  VIEW_TASK_LIMITS_DEFAULT,
  ViewTask,
  type ViewTaskEvents,
  type ViewTaskLimits,
} from '../../views/view-task.js';
import { tempDir } from '../harness/temp-dir.js';
import { interceptLog } from '../harness/intercept-log.js';
import { isClaimBatch } from './view-check.js';

/**
 * Appends another processor's claim to `topic` through `writer`: partition 0's, then one in
 * `partition` carrying its epoch; answers the epoch (partition 0's claim's offset).
 */
export async function appendLateClaim(
  writer: LogClient,
  topic: string,
  partitions: number,
  partition: number,
): Promise<number> {
  const claim = (p: number, epoch: number | null) =>
    encodeBatch([
      {
        key: claimKey(p, partitions),
        value: null,
        timestampMs: Date.now(),
        headers: claimHeaders(epoch),
      },
    ]);
  const { lastOffset: epoch } = await writer.append(topic, 0, claim(0, null));
  if (partition !== 0) await writer.append(topic, partition, claim(partition, epoch));
  return epoch;
}

/**
 * `log`, but the first output append to `topic` after `arm()` (to `only`, when given) lands after
 * a late claim in its partition, appended through `writer`.
 */
export function claimingLog(
  log: LogClient,
  writer: LogClient,
  topic: string,
  partitions: number,
  only?: number,
): { log: LogClient; arm: () => void } {
  let armed = false;
  const proxy = interceptLog(log, {
    append: async (to, partition, bytes, ...rest) => {
      if (armed && to === topic && (only ?? partition) === partition && !isClaimBatch(bytes)) {
        armed = false;
        await appendLateClaim(writer, topic, partitions, partition);
      }
      return log.append(to, partition, bytes, ...rest);
    },
  });
  return { log: proxy, arm: () => void (armed = true) };
}

export interface ViewTaskRig {
  node: OpenLogNode;
  /** Appends one document of the source per key, in turn. */
  write(docs: readonly [key: string, value: Record<string, unknown>][]): Promise<void>;
  /** Starts a task writing `topic`, its state in a directory named by the topic. */
  start(options: {
    topic: string;
    takeover: boolean;
    log: LogClient;
    limits?: Partial<ViewTaskLimits>;
    events?: ViewTaskEvents;
  }): ViewTask;
  /** Stops a task before close(), which then leaves it alone. */
  stop(task: ViewTask): Promise<void>;
  close(): Promise<void>;
}

export async function openViewTaskRig(
  name: string,
  source: string,
  partitions: number,
  definition: ViewDefinition,
  /** More of the log-node's options: its Kafka listener, its cluster secret. */
  nodeOptions: Partial<LogNodeOptions> = {},
): Promise<ViewTaskRig> {
  const dir = tempDir(name);
  const logger = pino({ level: 'silent' }, new Writable({ write: (_c, _e, done) => done() }));
  const node = await openLogNode({
    ...nodeOptions,
    dataDir: `${dir.path}/log`,
    partitions,
    logger,
  });
  await node.client.ensureTopic(source);
  const tasks = new Set<ViewTask>();
  const encoder = new TextEncoder();
  return {
    node,
    async write(docs) {
      for (const [key, value] of docs) {
        await node.client.append(
          source,
          partitionFor(key, partitions),
          encodeBatch([
            { key, value: encoder.encode(JSON.stringify(value)), timestampMs: Date.now() },
          ]),
        );
      }
    },
    start({ topic, takeover, log, limits = {}, events }) {
      const task = new ViewTask(
        {
          view: parseViewDefinition(topic, definition),
          version: 1,
          topic,
          sourceTopic: source,
          sourceIsView: false,
          takeover,
        },
        `${dir.path}/views/${topic}`,
        partitions,
        log,
        logger,
        { ...VIEW_TASK_LIMITS_DEFAULT, fetchWaitMs: 50, retryMs: 50, ...limits },
        events,
      );
      tasks.add(task);
      task.start();
      return task;
    },
    async stop(task) {
      tasks.delete(task);
      await task.stop();
    },
    async close() {
      for (const task of tasks) await task.stop();
      await node.stop();
      dir.cleanup();
    },
  };
}
