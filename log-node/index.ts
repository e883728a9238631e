/** The log-node's public surface: start one, and the types its callers need. */
import { withDataDirLock } from '../shared/data-dir-lock.js';
import { createLogger, type Logger } from '../shared/logger.js';
import { listen } from '../shared/http-server.js';
import { systemClock, type Clock } from './clock.js';
import { loadOrCreateClusterMeta } from './cluster-meta.js';
import { logNodeConfig, logNodeDefaults, type LogNodeConfig } from './config.js';
import { LogCleaner } from './log-cleaner.js';
import { LogNode } from './log-node.js';
import { LocalLogClient } from './local-log-client.js';
import { createLogNodeApp } from './routes.js';
import type { LogClient } from '../shared/log-api.js';
import { attachKafkaFace, type KafkaFace } from './kafka/attach.js';

export type { LogNodeConfig, FsyncPolicy, CleanupPolicy } from './config.js';
export type { Clock } from './clock.js';
export type { FileIO } from '../shared/file-io.js';
export type { KafkaFace } from './kafka/attach.js';
export { logNodeDefaults } from './config.js';

export interface LogNodeOptions extends Partial<Omit<LogNodeConfig, 'partitions'>> {
  dataDir: string;
  /** Only when creating a cluster; an existing data directory keeps its own count. */
  partitions?: number;
  clock?: Clock;
  logger?: Logger;
  /** The Kafka listener; absent or null: none. */
  kafka?: KafkaFace | null;
}

export interface OpenLogNode {
  clusterId: string;
  partitions: number;
  node: LogNode;
  cleaner: LogCleaner;
  /** The log contract bound to this node in-process. */
  client: LogClient;
  /**
   * The same, for the view processors: an append to a topic that does not exist is 404
   * `unknown_topic` instead of creating it (a view's topic goes only with its version).
   */
  viewClient: LogClient;
  /** The Kafka listener's port, or null when it is off. */
  kafkaPort: number | null;
  /** Appends already queued are fsynced and answered; then the partitions close. */
  stop(): Promise<void>;
}

export interface RunningLogNode extends OpenLogNode {
  url: string;
}

/** A log-node serving its HTTP routes (health, status: routes.ts) on `host:port`. */
export function startLogNode(options: LogNodeOptions): Promise<RunningLogNode> {
  return withLock(options, async (node, cleaner, logger) => {
    const listener = await listen(
      createLogNodeApp(node, cleaner, logger),
      node.config.host,
      node.config.port,
    );
    logger.info(
      { url: listener.url, clusterId: node.meta.clusterId, partitions: node.meta.partitions },
      'log-node ready',
    );
    return { url: listener.url, close: (then) => listener.close(then) };
  });
}

/**
 * A log-node with no listener, for `tailbase start`: its callers reach it through `client`, in
 * the same process, with no socket between them.
 */
export function openLogNode(options: LogNodeOptions): Promise<OpenLogNode> {
  return withLock(options, async () => ({ url: undefined, close: (then) => then() }));
}

interface Exposed<U> {
  url: U;
  /** Stops taking requests, runs `then` (closing the partitions), and finishes. */
  close(then: () => Promise<void>): Promise<void>;
}

async function withLock<U extends string | undefined>(
  options: LogNodeOptions,
  expose: (node: LogNode, cleaner: LogCleaner, logger: Logger) => Promise<Exposed<U>>,
): Promise<OpenLogNode & { url: U }> {
  const logger = options.logger ?? createLogger('log-node');
  // Two processes appending to one partition both hand out the same offsets (invariant 1).
  return withDataDirLock(options.dataDir, async (lock) => {
    const meta = loadOrCreateClusterMeta(
      options.dataDir,
      {
        partitions: options.partitions,
        partitionsDefault: logNodeDefaults.partitions,
        nodeId: options.nodeId,
        clusterId: options.clusterId,
        hostedPartitions: options.hostedPartitions,
      },
      options.fileIO,
    );
    const config = logNodeConfig({ ...options, partitions: meta.partitions });
    const node = new LogNode(config, meta, options.clock ?? systemClock, logger);
    const cleaner = new LogCleaner(node, options.clock ?? systemClock, logger);
    const client = new LocalLogClient(node);
    const viewClient = new LocalLogClient(node, { appendCreatesTopics: false });
    const opened = async () => {
      const kafka = options.kafka
        ? await attachKafkaFace(options.kafka, {
            log: client,
            logCreatingNothing: viewClient,
            config,
            hostsPartitionZero: meta.hostedPartitions.includes(0),
            logger,
          })
        : null;
      try {
        return { kafka, exposed: await expose(node, cleaner, logger) };
      } catch (error) {
        await kafka?.close();
        throw error;
      }
    };
    const { kafka, exposed } = await opened().catch(async (error: unknown) => {
      // The lock goes once this returns: no partition of this process may still write then.
      await node.close();
      throw error;
    });
    cleaner.start();
    let stopping: Promise<void> | null = null;
    return {
      url: exposed.url,
      clusterId: meta.clusterId,
      partitions: meta.partitions,
      node,
      cleaner,
      client,
      viewClient,
      kafkaPort: kafka?.port ?? null,
      stop: () => {
        stopping ??= (async () => {
          try {
            node.closing = true;
            await kafka?.close();
            await cleaner.stop();
            await exposed.close(() => node.close());
          } finally {
            lock.release();
          }
        })();
        return stopping;
      },
    };
  });
}
