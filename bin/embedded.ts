/**
 * `tailbase start`: a log-node, a serve-node and the gateway in one process, bound in-process.
 * The gateway reaches the log and the serve-node through the same typed contracts a cluster
 * reaches over the network (shared/log-api.ts, shared/serve-api.ts), carried by MessagePorts
 * (shared/port-rpc.ts) between three threads; only the gateway listens.
 * - The main thread is the HTTP edge (the gateway).
 * - The log-node (group commit, fsync) has a thread of its own (log-worker.ts), so an append is
 *   acknowledged as soon as its write returns, not when a busy event loop gets to it: sharing
 *   the serve-node's thread, a batch's ack took 2.9-3.1 ms, alone 1.1-2.0 ms.
 * - The serve-node applies on another (serve-worker.ts), and reads on `--read-threads` threads
 *   of their own (read-worker.ts, one a core by default), each with its own LMDB and SQLite read
 *   handles, told of every commit by the apply thread (serve-node/read-threads.ts): searches at
 *   10^6 documents on the one serve thread used 1.1 cores of 2. With `--read-threads 0` the
 *   serve thread reads too.
 * - Key reads go to the read threads too by default; `--key-reads here` answers them on the main
 *   thread itself, from read handles of its own kept as the read threads keep theirs: a GET then
 *   costs no hop between threads (one client's p50 0.10 against 0.19 ms), but the main thread,
 *   which bounds the rate, does the read (16 clients' GETs 14,700 against 20,800/s, README.md
 *   "Read threads and key reads").
 * - The view processors run on a thread of their own (views-worker.ts), tailing the log-node's
 *   thread through a port of their own; the gateway reaches them through
 *   shared/port-view-client.ts. On the main thread their rounds took the edge's time: one view
 *   cost the PUT rate a quarter and more (bench/README.md, views).
 * Data goes to <data>/log, <data>/serve and <data>/views (views/README.md); the gateway URL is
 * printed once the serve-node has caught up.
 *
 * With `--log` (an existing Kafka or Redpanda cluster, or tailbase log-nodes) there is no log-node
 * thread: the gateway, the serve-node thread and the view processors' thread each connect to that
 * log, as their own processes would, and <data>/serve and <data>/views are written.
 */
import path from 'node:path';
import { MessageChannel } from 'node:worker_threads';
import { type Command, Option } from 'commander';
import {
  parseApiKeys,
  startGateway,
  type GatewayConfigInput,
  type GatewayHandle,
} from '../gateway/index.js';
import { addGatewayLimitOptions, gatewayLimitValues } from '../gateway/main.js';
import { DEFAULT_LIMITS } from '../serve-node/config.js';
import { readChannelName } from '../serve-node/index.js';
import {
  memoryLimitOptions,
  memoryLimitValues,
  applySliceOptions,
  applySliceValues,
  type ApplySliceLimits,
  searchTopkListedDfMinOption,
  searchTopkMergeSegmentsOption,
  ftsAutomergeSegmentsOption,
  type MemoryLimits,
} from '../serve-node/main.js';
import {
  APPLY_THREAD_NICE_DEFAULT,
  applyThreadNiceOption,
  integerOption,
  isLoopback,
  kafkaAdvertisedOptions,
  kafkaLogOf,
  kafkaLogOptions,
  kafkaPortOf,
  kafkaPortOption,
  onShutdownSignal,
  parseLogUrls,
} from '../shared/cli-options.js';
import type { LogClient } from '../shared/log-api.js';
import type { KafkaConnectOptions } from '../shared/log-connect.js';
import { createLogger, flushLogs } from '../shared/logger.js';
import { PortLogClient } from '../shared/port-log-client.js';
import { PortServeClient } from '../shared/port-serve-client.js';
import { PortViewClient } from '../shared/port-view-client.js';
import type { ServeClient } from '../shared/serve-api.js';
import { viewWriterKafka, type ViewProcessing } from '../shared/view-api.js';
import { viewLimitOptions, viewLimitValues } from '../views/cli-options.js';
import type { ViewTaskLimits } from '../views/view-task.js';
import type { LogWorkerData, LogWorkerInfo } from './log-worker.js';
import { portsOf, startNodeThread, type WorkerLog } from './node-thread.js';
import { defaultReadThreads, startReadPool } from './read-pool.js';
import { readyBanner } from './ready-banner.js';
import type { ServeWorkerData } from './serve-worker.js';
import type { ViewsWorkerData } from './views-worker.js';

export interface EmbeddedOptions {
  dataDir: string;
  host: string;
  port: number;
  partitions?: number;
  apiKeys?: string;
  /** The Kafka listener's port (0: any free one), or null: no Kafka listener. */
  kafkaPort: number | null;
  /** The address Kafka clients are told to reconnect to, when not the one they reached. */
  kafkaAdvertised?: { host?: string; port?: number };
  /** How long start waits for the serve-node to catch up with the log before giving up. */
  readyWaitMsMax: number;
  gateway?: Pick<GatewayConfigInput, 'limits' | 'writer' | 'logCompression'>;
  /** Threads that answer reads; 0: the serve-node's apply thread answers them too. */
  readThreads: number;
  /**
   * With read threads: key reads answered on the main thread from its own read handles, with no
   * hop to another thread (default false: on the read threads).
   */
  keyReadsHere?: boolean;
  /**
   * With key reads here: scans in key order (no filter or sort) of at most this many documents
   * are answered on the main thread too (default SCAN_HERE_LIMIT_MAX_DEFAULT; 0: none).
   */
  scanHereLimitMax?: number;
  /**
   * An external log instead of the log-node thread; null or absent: the log-node thread. With
   * `clusterSecret` (tailbase log-nodes' own), the view processors authenticate as the view
   * processor, the one principal whose writes to a view's topic a log-node takes; without, with
   * `kafka`'s SASL settings, as on another Kafka.
   */
  log?: { urls: string[]; kafka: KafkaConnectOptions; clusterSecret?: string } | null;
  viewLimits?: Partial<ViewTaskLimits>;
  /** Rows a term must be in for the search store to keep its top-k list (serve-node/topk-index.ts). */
  searchTopkListedDfMin?: number;
  /** Segments of a tier of a top-k list merged into one (ServeNodeLimits.searchTopkMergeSegments). */
  searchTopkMergeSegments?: number;
  /** FTS5's automerge of the search tables (ServeNodeLimits.ftsAutomergeSegments). */
  ftsAutomergeSegments?: number;
  /** The serve-node's cache bounds (serve-node/memory-bounds.ts); absent: its defaults. */
  memoryLimits?: MemoryLimits;
  /** The bounds of the serve-node's apply transactions; absent: its defaults. */
  applySliceLimits?: ApplySliceLimits;
  /**
   * Nice levels the serve-node's apply thread takes below the process's, so the threads that
   * answer requests get a core first (bin/thread-nice.ts); absent: APPLY_THREAD_NICE_DEFAULT.
   * Not taken with `readThreads` 0, where the apply thread answers the reads.
   */
  applyThreadNice?: number;
}

export interface RunningEmbedded {
  url: string;
  /** The Kafka listener's port, or null when it is off. */
  kafkaPort: number | null;
  stop(): Promise<void>;
}

const READY_POLL_MS = 100;
/**
 * None by default: a 20-document scan answered on the HTTP thread saved the whole process CPU
 * (about 220 µs a scan against 270 with the hop, the embedded bench of issue 28) but cost the
 * HTTP thread 50-70 µs more, and that thread bounds the rate while the read threads have a core
 * to spare. On a machine whose cores are busy anyway, the saving is worth it.
 */
export const SCAN_HERE_LIMIT_MAX_DEFAULT = 0;

export async function startEmbedded(options: EmbeddedOptions): Promise<RunningEmbedded> {
  if (options.log) return startOnLog(options, options.log);
  const logger = createLogger('tailbase');
  const onDeath = (error: Error) => {
    // As an uncaught error would end a single-threaded process: a node is gone.
    logger.fatal({ err: error }, 'a node thread died; exiting');
    flushLogs();
    process.exit(1);
  };
  // The log answers the gateway and the serve-node each on a port of its own.
  const gatewayLog = new MessageChannel();
  const serveLog = new MessageChannel();
  const viewsLog = new MessageChannel();
  const gatewayServe = new MessageChannel();
  const readChannel = readChannelName(options.dataDir);
  const logThread = await startNodeThread(
    'log-node',
    new URL('./log-worker.js', import.meta.url),
    {
      dataDir: path.join(options.dataDir, 'log'),
      partitions: options.partitions,
      ports: [gatewayLog.port2, serveLog.port1],
      viewsPort: viewsLog.port2,
      // The Kafka listener binds where the gateway does, with the same API keys for SASL/PLAIN.
      kafka:
        options.kafkaPort === null
          ? null
          : {
              host: options.host,
              port: options.kafkaPort,
              apiKeys: options.apiKeys ? parseApiKeys(options.apiKeys) : [],
              advertisedHost: options.kafkaAdvertised?.host,
              advertisedPort: options.kafkaAdvertised?.port,
            },
    } satisfies LogWorkerData,
    [gatewayLog.port2, serveLog.port1, viewsLog.port2],
    onDeath,
  );
  const serveThread = await startNodeThread(
    'serve-node',
    new URL('./serve-worker.js', import.meta.url),
    {
      dataDir: path.join(options.dataDir, 'serve'),
      log: { port: serveLog.port2 },
      servePort: gatewayServe.port2,
      ...(options.readThreads > 0 ? { readChannel } : {}),
      node: serveNodeOf(options),
      applyThreadNice: applyThreadNiceOf(options),
    } satisfies ServeWorkerData,
    [serveLog.port2, gatewayServe.port2],
    onDeath,
  ).catch(async (error: unknown) => {
    await logThread.stop();
    throw error;
  });
  const log = new PortLogClient(gatewayLog.port1);
  const applier = new PortServeClient(gatewayServe.port1);
  const reads = await withReadThreads(options, readChannel, applier, onDeath).catch(
    async (error: unknown) => {
      await serveThread.stop();
      await logThread.stop();
      throw error;
    },
  );
  const views = await startViewThread(options, { port: viewsLog.port1 }, applier, onDeath).catch(
    async (error: unknown) => {
      await reads.stop();
      await serveThread.stop();
      await logThread.stop();
      throw error;
    },
  );
  // The serve-node stops tailing before the log-node closes its partitions, every append fsynced.
  const stopNodes = async () => {
    await views.stop();
    await reads.stop();
    await serveThread.stop();
    await logThread.stop();
    const stopped = new Error('tailbase stopped');
    log.close(stopped);
    applier.close(stopped);
    gatewayLog.port1.close();
    gatewayServe.port1.close();
  };
  const gateway = await startEdge(options, reads.client, { log }, stopNodes, views.client);
  return {
    url: gateway.url,
    kafkaPort: (logThread.info as LogWorkerInfo).kafkaPort,
    // In-flight writes finish at the gateway and are fsynced by the log-node before it closes.
    stop: async () => {
      await gateway.stop();
      await stopNodes();
    },
  };
}

/**
 * `tailbase start --log`: the serve-node thread, the view processors' thread and the gateway, each
 * connected to the external log by itself (the partition count and topic prefix alike), bound to
 * each other in-process. The view processors run every view and join no group.
 */
async function startOnLog(
  options: EmbeddedOptions,
  log: NonNullable<EmbeddedOptions['log']>,
): Promise<RunningEmbedded> {
  const logger = createLogger('tailbase');
  const onDeath = (error: Error) => {
    logger.fatal({ err: error }, 'a node thread died; exiting');
    flushLogs();
    process.exit(1);
  };
  const kafka = { ...log.kafka, partitions: log.kafka.partitions ?? options.partitions };
  const gatewayServe = new MessageChannel();
  const readChannel = readChannelName(options.dataDir);
  const serveThread = await startNodeThread(
    'serve-node',
    new URL('./serve-worker.js', import.meta.url),
    {
      dataDir: path.join(options.dataDir, 'serve'),
      log: { urls: log.urls, options: { kafka } },
      servePort: gatewayServe.port2,
      ...(options.readThreads > 0 ? { readChannel } : {}),
      node: serveNodeOf(options),
      applyThreadNice: applyThreadNiceOf(options),
    } satisfies ServeWorkerData,
    [gatewayServe.port2],
    onDeath,
  );
  const applier = new PortServeClient(gatewayServe.port1);
  const reads = await withReadThreads(options, readChannel, applier, onDeath).catch(
    async (error: unknown) => {
      await serveThread.stop();
      throw error;
    },
  );
  const views = await startViewThread(
    options,
    { urls: log.urls, options: { kafka: viewWriterKafka(kafka, log.clusterSecret) } },
    applier,
    onDeath,
  ).catch(async (error: unknown) => {
    await reads.stop();
    await serveThread.stop();
    throw error;
  });
  const stopNodes = async () => {
    await views.stop();
    await reads.stop();
    await serveThread.stop();
    applier.close(new Error('tailbase stopped'));
    gatewayServe.port1.close();
  };
  const gateway = await startEdge(
    options,
    reads.client,
    { logUrls: log.urls, kafka },
    stopNodes,
    views.client,
  );
  return {
    url: gateway.url,
    kafkaPort: null,
    stop: async () => {
      await gateway.stop();
      await stopNodes();
    },
  };
}

/**
 * The gateway, once the serve-node has caught up, on the log-node thread's port (`log`) or the
 * external log it connects to itself; a failure stops the nodes first.
 */
async function startEdge(
  options: EmbeddedOptions,
  serve: ServeClient,
  log: { log: LogClient } | { logUrls: string[]; kafka: KafkaConnectOptions },
  stopNodes: () => Promise<void>,
  views?: ViewProcessing,
): Promise<GatewayHandle> {
  try {
    await waitReady(serve, options.readyWaitMsMax);
    return await startGateway(
      {
        host: options.host,
        port: options.port,
        logUrls: 'logUrls' in log ? log.logUrls : [],
        ...('kafka' in log ? { kafka: log.kafka } : {}),
        serveUrls: [],
        ...options.gateway,
        ...(options.apiKeys ? { apiKeys: parseApiKeys(options.apiKeys) } : {}),
      },
      {
        ...('log' in log ? { log: log.log } : {}),
        serve: [serve],
        views,
        logger: createLogger('tailbase').child({ role: 'gateway' }),
      },
    );
  } catch (error) {
    await stopNodes();
    throw error;
  }
}

/**
 * The apply thread's nice levels: none without read threads, where it answers every read too
 * (withReadThreads), and a lowered thread would put the reads behind the rest of the machine.
 */
function applyThreadNiceOf(options: EmbeddedOptions): number {
  return options.readThreads > 0 ? (options.applyThreadNice ?? APPLY_THREAD_NICE_DEFAULT) : 0;
}

/** The read threads of `options.readThreads`, or the apply thread alone when there are none. */
async function withReadThreads(
  options: EmbeddedOptions,
  channel: string,
  applier: ServeClient,
  onDeath: (error: Error) => void,
): Promise<{ client: ServeClient; stop(): Promise<void> }> {
  if (options.readThreads === 0) return { client: applier, stop: async () => undefined };
  return startReadPool({
    count: options.readThreads,
    channel,
    applier,
    onDeath,
    keyReadsHere: options.keyReadsHere ?? false,
    scanHereLimitMax: options.scanHereLimitMax ?? SCAN_HERE_LIMIT_MAX_DEFAULT,
    logger: createLogger('tailbase').child({ role: 'serve-node-reads' }),
  });
}

/** What the serve-node thread is told beyond its data and channels. */
function serveNodeOf(options: EmbeddedOptions): ServeWorkerData['node'] {
  const listedDfMin = options.searchTopkListedDfMin ?? DEFAULT_LIMITS.searchTopkListedDfMin;
  return {
    limits: {
      searchTopkListedDfMin: listedDfMin,
      searchTopkMergeSegments:
        options.searchTopkMergeSegments ?? DEFAULT_LIMITS.searchTopkMergeSegments,
      ftsAutomergeSegments: options.ftsAutomergeSegments ?? DEFAULT_LIMITS.ftsAutomergeSegments,
      ...options.memoryLimits,
      ...options.applySliceLimits,
    },
  };
}

/**
 * The view processors, on a thread of their own (views-worker.ts): on the main thread their
 * rounds took the HTTP edge's time. Reads of views reach them through `client`.
 */
async function startViewThread(
  options: EmbeddedOptions,
  log: WorkerLog,
  serve: ServeClient,
  onDeath: (error: Error) => void,
): Promise<{ client: PortViewClient; stop(): Promise<void> }> {
  const calls = new MessageChannel();
  const told = new MessageChannel();
  const progress = new MessageChannel();
  const logger = createLogger('tailbase').child({ role: 'views' });
  const client = new PortViewClient(
    calls.port1,
    told.port1,
    progress.port1,
    {
      // A rebuilt view is swapped in once the serve-node serves its output, not before.
      servedThrough: async (topic, offsets) => {
        const applied = new Map(
          (await serve.status()).partitions
            .filter((p) => p.topic === topic)
            .map((p) => [p.partition, p.applied]),
        );
        return [...offsets].every(([partition, last]) => (applied.get(partition) ?? 0) > last);
      },
    },
    (error) => logger.error({ err: error }, 'a call from the view processors failed'),
  );
  const closeViewPorts = (error: Error) => {
    client.close(error);
    calls.port1.close();
    told.port1.close();
    progress.port1.close();
  };
  const thread = await startNodeThread(
    'view processors',
    new URL('./views-worker.js', import.meta.url),
    {
      dataDir: path.join(options.dataDir, 'views'),
      log,
      calls: calls.port2,
      told: told.port2,
      progress: progress.port2,
      limits: options.viewLimits,
    } satisfies ViewsWorkerData,
    [...portsOf(log), calls.port2, told.port2, progress.port2],
    onDeath,
  ).catch((error: unknown) => {
    // The thread's ends close with it, but not when it failed before taking them: these would
    // keep an in-process caller's event loop alive.
    closeViewPorts(new Error('the view processors did not start'));
    throw error;
  });
  return {
    client,
    stop: async () => {
      await thread.stop();
      closeViewPorts(new Error('the view processors stopped'));
    },
  };
}

/** Polls the serve-node's own readiness (what its /readyz answers). */
async function waitReady(node: ServeClient, waitMsMax: number): Promise<void> {
  const deadline = Date.now() + waitMsMax;
  while (Date.now() < deadline) {
    if (await node.ready()) return;
    await new Promise((resolve) => setTimeout(resolve, READY_POLL_MS));
  }
  throw new Error(`the serve-node did not catch up with the log within ${waitMsMax} ms`);
}

export function registerStartCommand(program: Command): void {
  const command = program
    .command('start')
    .description(
      'run a whole tailbase (log-node, serve-node, gateway) in one process, or a serve-node and gateway on an existing log (--log)',
    )
    .addOption(new Option('--data <dir>', 'data directory').env('TAILBASE_DATA').default('./data'))
    .addOption(
      new Option('--host <host>', 'gateway address').env('TAILBASE_HOST').default('127.0.0.1'),
    )
    .addOption(integerOption('--port <port>', 'gateway port', 'TAILBASE_PORT', 8080))
    .addOption(
      new Option(
        '--log <urls>',
        "an existing log instead of a local log-node: kafka://host:port[,host:port...] (Kafka or Redpanda brokers, or log-nodes' Kafka listeners)",
      )
        .env('TAILBASE_LOG')
        .argParser(parseLogUrls),
    )
    .addOption(
      new Option(
        '--cluster-secret <secret>',
        "with --log on tailbase log-nodes: their cluster secret, with which the view processors write the views' topics",
      ).env('TAILBASE_CLUSTER_SECRET'),
    )
    .addOption(kafkaPortOption())
    .addOption(kafkaAdvertisedOptions()[0])
    .addOption(kafkaAdvertisedOptions()[1])
    .addOption(
      integerOption(
        '--partitions <n>',
        'partitions, when creating the data (with --log: of new collection topics, when the cluster cannot say)',
        'TAILBASE_PARTITIONS',
      ),
    )
    .addOption(
      new Option('--api-keys <keys>', 'API keys as KEY:read,write;KEY2:admin').env(
        'TAILBASE_API_KEYS',
      ),
    )
    .addOption(
      integerOption(
        '--read-threads <n>',
        'threads answering reads (0: the serve-node thread answers them too); default: one a core',
        'TAILBASE_READ_THREADS',
        defaultReadThreads(),
        0,
      ),
    )
    .addOption(
      new Option(
        '--key-reads <here|threads>',
        'with read threads: key reads on the HTTP thread from its own read handles (here), or on the read threads',
      )
        .env('TAILBASE_KEY_READS')
        .choices(['here', 'threads'])
        .default('threads'),
    )
    .addOption(
      integerOption(
        '--scan-here-limit-max <documents>',
        'with key reads here: scans in key order (no filter, no sort) of at most this many documents are answered on the HTTP thread too (0: none)',
        'TAILBASE_SCAN_HERE_LIMIT_MAX',
        SCAN_HERE_LIMIT_MAX_DEFAULT,
        0,
      ),
    )
    .addOption(searchTopkListedDfMinOption())
    .addOption(searchTopkMergeSegmentsOption())
    .addOption(applyThreadNiceOption())
    .addOption(ftsAutomergeSegmentsOption())
    .addOption(
      integerOption(
        '--ready-wait-ms-max <ms>',
        'how long to wait for catch-up at start',
        'TAILBASE_READY_WAIT_MS_MAX',
        600_000,
      ),
    );
  for (const option of kafkaLogOptions()) command.addOption(option);
  for (const option of viewLimitOptions()) command.addOption(option);
  for (const option of memoryLimitOptions()) command.addOption(option);
  for (const option of applySliceOptions()) command.addOption(option);
  addGatewayLimitOptions(command).action(
    async (
      flags: {
        data: string;
        host: string;
        port: number;
        partitions?: number;
        apiKeys?: string;
        kafkaPort: number | 'off';
        kafkaAdvertisedHost?: string;
        kafkaAdvertisedPort?: number;
        readyWaitMsMax: number;
        readThreads: number;
        keyReads: 'here' | 'threads';
        scanHereLimitMax: number;
        applyThreadNice: number;
        searchTopkListedDfMin: number;
        searchTopkMergeSegments: number;
        ftsAutomergeSegments: number;
        log?: string[];
        clusterSecret?: string;
      } & Record<string, unknown>,
    ) => {
      if (!isLoopback(flags.host) && !flags.apiKeys) {
        throw new Error(`binding ${flags.host} needs API keys (--api-keys or TAILBASE_API_KEYS)`);
      }
      const running = await startEmbedded({
        dataDir: flags.data,
        host: flags.host,
        port: flags.port,
        partitions: flags.partitions,
        apiKeys: flags.apiKeys,
        kafkaPort: kafkaPortOf(flags.kafkaPort),
        kafkaAdvertised: { host: flags.kafkaAdvertisedHost, port: flags.kafkaAdvertisedPort },
        readyWaitMsMax: flags.readyWaitMsMax,
        readThreads: flags.readThreads,
        keyReadsHere: flags.keyReads === 'here',
        scanHereLimitMax: flags.scanHereLimitMax,
        gateway: gatewayLimitValues(flags),
        log: flags.log
          ? { urls: flags.log, kafka: kafkaLogOf(flags), clusterSecret: flags.clusterSecret }
          : null,
        viewLimits: viewLimitValues(flags),
        searchTopkListedDfMin: flags.searchTopkListedDfMin,
        searchTopkMergeSegments: flags.searchTopkMergeSegments,
        ftsAutomergeSegments: flags.ftsAutomergeSegments,
        memoryLimits: memoryLimitValues(flags),
        applySliceLimits: applySliceValues(flags),
        applyThreadNice: flags.applyThreadNice,
      });
      process.stdout.write(
        readyBanner({
          url: running.url,
          host: flags.host,
          kafkaPort: running.kafkaPort,
          log: flags.log?.join(','),
          dataDir: path.resolve(flags.data),
        }),
      );
      onShutdownSignal(createLogger('tailbase'), running.stop);
    },
  );
}
