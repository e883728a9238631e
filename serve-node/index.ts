/** The serve-node's public surface: start one, and the types its callers need. */
import { withDataDirLock } from '../shared/data-dir-lock.js';
import { connectLog, type KafkaConnectOptions } from '../shared/log-connect.js';
import { PARTITIONS_MAX, type LogClient } from '../shared/log-api.js';
import { LocalServeClient } from './local-serve-client.js';
import { listen } from '../shared/http-server.js';
import { createLogger, type Logger } from '../shared/logger.js';
import { DEFAULT_HOST, DEFAULT_LIMITS, type ServeNodeConfig } from './config.js';
import { createServeNodeApp } from './routes.js';
import { ServeNode } from './serve-node.js';
import {
  createGeneration,
  currentGeneration,
  loadOrCreateNodeId,
  seedFromSnapshot,
} from './store-dirs.js';

export type { ServeNodeConfig, ServeNodeLimits } from './config.js';
export { DEFAULT_HOST, DEFAULT_LIMITS as serveNodeDefaults } from './config.js';
export { LocalServeClient } from './local-serve-client.js';
export { ReadNode } from './read-node.js';
export { ReadPoolClient } from './read-pool-client.js';
export { readChannelName, ReadThreadsHub } from './read-threads.js';
export { createServeNodeApp } from './routes.js';
export { rangeReadsOn } from './threaded-range-reads.js';

export interface ServeNodeOptions extends ServeNodeConfig {
  clusterSecret?: string;
  /** How a log reached by kafka:// is reached and its topics named. */
  kafka?: KafkaConnectOptions;
  logger?: Logger;
  /** How long start waits for the log to answer before giving up. */
  logConnectMsMax?: number;
}

export interface OpenServeNode {
  nodeId: string;
  node: ServeNode;
  /** The serve contract bound to this node in-process. */
  client: LocalServeClient;
  stop(): Promise<void>;
}

export interface RunningServeNode extends OpenServeNode {
  url: string;
}

const LOG_CONNECT_MS_MAX = 30_000;

/** A serve-node tailing the log at `logUrls` (kafka://), serving its internal HTTP API. */
export async function startServeNode(options: ServeNodeOptions): Promise<RunningServeNode> {
  const logger = options.logger ?? createLogger('serve-node');
  if (options.logUrls.length === 0) throw new Error('a serve-node needs at least one log URL');
  // Two processes applying into one set of stores corrupt them; the lock covers DATA and all in it.
  return withDataDirLock(options.dataDir, async (lock) => {
    const connected = await connectLog(options.logUrls, {
      kafka: options.kafka,
      logger,
      connectWaitMs: options.logConnectMsMax ?? LOG_CONNECT_MS_MAX,
    });
    return startLocked(options, connected.log, logger, lock.release, async (node) => {
      const listener = await listen(
        createServeNodeApp(node, logger),
        options.host ?? DEFAULT_HOST,
        options.port ?? 0,
      );
      return {
        url: listener.url,
        close: (then) =>
          listener.close(async () => {
            await then();
            connected.close();
          }),
      };
    }).catch((error: unknown) => {
      connected.close();
      throw error;
    });
  });
}

/**
 * A serve-node with no listener, tailing `log` (for `tailbase start`, the log-node of the same
 * process); its callers read through `client`.
 */
export function openServeNode(
  options: Omit<ServeNodeOptions, 'logUrls' | 'host' | 'port'>,
  log: LogClient,
): Promise<OpenServeNode> {
  const logger = options.logger ?? createLogger('serve-node');
  return withDataDirLock(options.dataDir, (lock) =>
    startLocked(options, log, logger, lock.release, async () => ({
      url: undefined,
      close: (then) => then(),
    })),
  );
}

interface Exposed<U> {
  url: U;
  /** Stops taking requests, runs `then` (stopping the node), and finishes. */
  close(then: () => Promise<void>): Promise<void>;
}

async function startLocked<U extends string | undefined>(
  options: Omit<ServeNodeOptions, 'logUrls'>,
  log: LogClient,
  logger: Logger,
  releaseLock: () => void,
  expose: (node: ServeNode) => Promise<Exposed<U>>,
): Promise<OpenServeNode & { url: U }> {
  const limits = { ...DEFAULT_LIMITS, ...options.limits };
  const cluster = await log.cluster();
  const hosted = [...new Set(options.partitions ?? range(cluster.partitions))].sort(
    (a, b) => a - b,
  );
  for (const partition of hosted) {
    // FTS5 rows are offset * PARTITIONS_MAX + partition (fts-table.ts): a larger one would collide.
    if (partition >= PARTITIONS_MAX) {
      throw new Error(`a serve-node hosts partitions below ${PARTITIONS_MAX}, not ${partition}`);
    }
    if (!Number.isInteger(partition) || partition < 0 || partition >= cluster.partitions) {
      throw new Error(`partition ${partition} is not one of the log's ${cluster.partitions}`);
    }
  }
  const nodeId = loadOrCreateNodeId(options.dataDir);
  let generation = currentGeneration(options.dataDir);
  if (generation === 0) {
    generation = 1;
    const dir = createGeneration(options.dataDir, generation);
    if (options.fromSnapshot !== undefined) seedFromSnapshot(options.fromSnapshot, dir);
  } else if (options.fromSnapshot !== undefined) {
    logger.warn('the data directory already holds stores; --from-snapshot is ignored');
  }
  const node = new ServeNode({
    nodeId,
    clusterId: cluster.clusterId,
    dataDir: options.dataDir,
    generation,
    hosted,
    limits,
    clusterSecret: options.clusterSecret,
    log,
    logger,
  });
  let exposed: Exposed<U>;
  try {
    await node.start();
    exposed = await expose(node);
  } catch (error) {
    // The lock goes once this returns: the stores must be closed by then, however start failed.
    await node.stop();
    throw error;
  }
  logger.info({ url: exposed.url, nodeId, partitions: hosted }, 'serve-node ready');
  let stopping: Promise<void> | null = null;
  return {
    url: exposed.url,
    nodeId,
    node,
    client: new LocalServeClient(node, (error) => logger.error({ err: error }, 'rebuild failed')),
    stop: () => {
      stopping ??= (async () => {
        try {
          await exposed.close(() => node.stop());
        } finally {
          releaseLock();
        }
      })();
      return stopping;
    },
  };
}

function range(count: number): number[] {
  return Array.from({ length: count }, (_, i) => i);
}
