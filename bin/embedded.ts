/**
 * `tailbase start`: a log-node, a serve-node and the gateway in one process, bound in-process:
 * the gateway reaches the log and the serve-node through the same typed contracts a cluster
 * reaches over the network (shared/log-api.ts, shared/serve-api.ts), with no socket between them;
 * only the gateway listens. The main thread serves HTTP and the log (group commit, fsync); the
 * serve-node applies and answers reads on a worker thread (serve-node/serve-thread.ts), so the
 * two use both cores. Data goes to <data>/log and <data>/serve; the gateway URL is printed
 * once the serve-node has caught up.
 */
import path from 'node:path';
import { type Command, Option } from 'commander';
import { parseApiKeys, startGateway, type GatewayConfigInput } from '../gateway/index.js';
import { addGatewayLimitOptions, gatewayLimitValues } from '../gateway/main.js';
import { openLogNode } from '../log-node/index.js';
import { startServeThread } from '../serve-node/serve-thread.js';
import type { ServeClient } from '../shared/serve-api.js';
import { integerOption, isLoopback, onShutdownSignal } from '../shared/cli-options.js';
import { createLogger, flushLogs } from '../shared/logger.js';

export interface EmbeddedOptions {
  dataDir: string;
  host: string;
  port: number;
  partitions?: number;
  apiKeys?: string;
  /** How long start waits for the serve-node to catch up with the log before giving up. */
  readyWaitMsMax: number;
  gateway?: Pick<GatewayConfigInput, 'limits' | 'writer'>;
}

export interface RunningEmbedded {
  url: string;
  stop(): Promise<void>;
}

const READY_POLL_MS = 100;

export async function startEmbedded(options: EmbeddedOptions): Promise<RunningEmbedded> {
  const logger = createLogger('tailbase');
  const log = await openLogNode({
    dataDir: path.join(options.dataDir, 'log'),
    partitions: options.partitions,
    logger: logger.child({ role: 'log-node' }),
  });
  const serve = await startServeThread(
    { dataDir: path.join(options.dataDir, 'serve') },
    log.client,
    logger,
    (error) => {
      // As an uncaught error would end a single-threaded process: nothing serves reads now.
      logger.fatal({ err: error }, 'the serve-node thread died; exiting');
      flushLogs();
      process.exit(1);
    },
  ).catch(async (error: unknown) => {
    await log.stop();
    throw error;
  });
  await waitReady(serve.client, options.readyWaitMsMax).catch(async (error: unknown) => {
    await serve.stop();
    await log.stop();
    throw error;
  });
  const gateway = await startGateway(
    {
      host: options.host,
      port: options.port,
      logUrls: [],
      serveUrls: [],
      ...options.gateway,
      ...(options.apiKeys ? { apiKeys: parseApiKeys(options.apiKeys) } : {}),
    },
    { log: log.client, serve: [serve.client], logger: logger.child({ role: 'gateway' }) },
  ).catch(async (error: unknown) => {
    await serve.stop();
    await log.stop();
    throw error;
  });
  return {
    url: gateway.url,
    // In-flight writes finish at the gateway and are fsynced by the log-node before it closes.
    stop: async () => {
      await gateway.stop();
      await serve.stop();
      await log.stop();
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
    .description('run a whole tailbase (log-node, serve-node, gateway) in one process')
    .addOption(new Option('--data <dir>', 'data directory').env('TAILBASE_DATA').default('./data'))
    .addOption(
      new Option('--host <host>', 'gateway address').env('TAILBASE_HOST').default('127.0.0.1'),
    )
    .addOption(integerOption('--port <port>', 'gateway port', 'TAILBASE_PORT', 8080))
    .addOption(
      integerOption(
        '--partitions <n>',
        'partitions, when creating the data',
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
        '--ready-wait-ms-max <ms>',
        'how long to wait for catch-up at start',
        'TAILBASE_READY_WAIT_MS_MAX',
        600_000,
      ),
    );
  addGatewayLimitOptions(command).action(
    async (
      flags: {
        data: string;
        host: string;
        port: number;
        partitions?: number;
        apiKeys?: string;
        readyWaitMsMax: number;
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
        readyWaitMsMax: flags.readyWaitMsMax,
        gateway: gatewayLimitValues(flags),
      });
      process.stdout.write(
        `tailbase is ready: ${running.url}  (data in ${path.resolve(flags.data)})\n`,
      );
      onShutdownSignal(createLogger('tailbase'), running.stop);
    },
  );
}
