/** The log-node's public surface: start one, and the types its callers need. */
import { withDataDirLock } from '../shared/data-dir-lock.js';
import { createLogger, type Logger } from '../shared/logger.js';
import { listen } from '../shared/http-server.js';
import { systemClock, type Clock } from './clock.js';
import { loadOrCreateClusterMeta } from './cluster-meta.js';
import { logNodeConfig, logNodeDefaults, type LogNodeConfig } from './config.js';
import { LogCleaner } from './log-cleaner.js';
import { LogNode } from './log-node.js';
import { createLogNodeApp } from './routes.js';

export type { LogNodeConfig, FsyncPolicy, CleanupPolicy } from './config.js';
export type { Clock } from './clock.js';
export { logNodeDefaults } from './config.js';

export interface LogNodeOptions extends Partial<Omit<LogNodeConfig, 'partitions'>> {
  dataDir: string;
  /** Only when creating a cluster; an existing data directory keeps its own count. */
  partitions?: number;
  clock?: Clock;
  logger?: Logger;
}

export interface RunningLogNode {
  url: string;
  clusterId: string;
  partitions: number;
  node: LogNode;
  cleaner: LogCleaner;
  stop(): Promise<void>;
}

export async function startLogNode(options: LogNodeOptions): Promise<RunningLogNode> {
  const logger = options.logger ?? createLogger('log-node');
  // Two processes appending to one partition both hand out the same offsets (invariant 1).
  return withDataDirLock(options.dataDir, (lock) => startLocked(options, logger, lock.release));
}

async function startLocked(
  options: LogNodeOptions,
  logger: Logger,
  releaseLock: () => void,
): Promise<RunningLogNode> {
  const meta = loadOrCreateClusterMeta(options.dataDir, {
    partitions: options.partitions,
    partitionsDefault: logNodeDefaults.partitions,
    nodeId: options.nodeId,
    clusterId: options.clusterId,
    hostedPartitions: options.hostedPartitions,
  });
  const config = logNodeConfig({ ...options, partitions: meta.partitions });
  const node = new LogNode(config, meta, options.clock ?? systemClock, logger);
  const cleaner = new LogCleaner(node, options.clock ?? systemClock, logger);
  const listener = await listen(
    createLogNodeApp(node, cleaner, logger),
    config.host,
    config.port,
  ).catch(async (error: unknown) => {
    // The lock goes once this returns: no partition of this process may still write then.
    await node.close();
    throw error;
  });
  cleaner.start();
  logger.info(
    { url: listener.url, clusterId: meta.clusterId, partitions: meta.partitions },
    'log-node ready',
  );
  let stopping: Promise<void> | null = null;
  return {
    url: listener.url,
    clusterId: meta.clusterId,
    partitions: meta.partitions,
    node,
    cleaner,
    stop: () => {
      stopping ??= (async () => {
        try {
          node.closing = true;
          await cleaner.stop();
          await listener.close(() => node.close());
        } finally {
          releaseLock();
        }
      })();
      return stopping;
    },
  };
}
