/** Starts real nodes on loopback ports in temp dirs for the gateway's tests; stop() removes all. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createGatewayApp,
  createGatewayServices,
  resolveGatewayConfig,
  startGateway,
  type GatewayHandle,
} from '../../gateway/index.js';
import type { GatewayConfigInput } from '../../gateway/config.js';
import type { GatewayServices } from '../../gateway/services.js';
import { openLogNode, type LogNodeOptions, type OpenLogNode } from '../../log-node/index.js';
import { KafkaLogClient } from '../../shared/kafka-log/index.js';
import type { LogClient } from '../../shared/log-api.js';
import { createLogger } from '../../shared/logger.js';
import type { ServeClient } from '../../shared/serve-api.js';
import type { ServeNodeLimits } from '../../serve-node/config.js';
import { startServeNode, type RunningServeNode } from '../../serve-node/index.js';

export const silent = createLogger('test', 'silent');

export async function tempDir(prefix: string): Promise<string> {
  return mkdtemp(join(tmpdir(), `tailbase-${prefix}-`));
}

export interface LogFixture {
  node: OpenLogNode;
  client: KafkaLogClient;
  /** The log as `--log` names it: `kafka://127.0.0.1:<port>`. */
  url: string;
  /** Its Kafka listener, `127.0.0.1:<port>`. */
  broker: string;
  dir: string;
  stop(): Promise<void>;
}

/** A log-node in-process with its Kafka listener on loopback, and a client of it. */
export async function startLog(
  partitions: number,
  options: Partial<LogNodeOptions> = {},
): Promise<LogFixture> {
  const dir = await tempDir('gw-log');
  const node = await openLogNode({
    ...options,
    dataDir: dir,
    partitions,
    logger: silent,
    kafka: { host: '127.0.0.1', port: 0 },
  });
  const broker = `127.0.0.1:${node.kafkaPort}`;
  const client = await KafkaLogClient.connect({ bootstrap: [broker], logger: silent });
  return {
    node,
    client,
    url: `kafka://${broker}`,
    broker,
    dir,
    async stop() {
      client.close();
      await node.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A serve-node in-process on `logUrl` (`kafka://...`), its stores in `dir`, hosting `partitions`. */
export function serveNodeOn(
  logUrl: string,
  dir: string,
  partitions: number[] = [0],
): Promise<RunningServeNode> {
  return startServeNode({ dataDir: dir, port: 0, logUrls: [logUrl], partitions, logger: silent });
}

/**
 * The gateway app without a socket, for `app.request` tests, over real clients; the log it names
 * (`/v1/status`, its config) is `input.logUrls`.
 */
export async function gatewayApp(
  log: LogClient,
  serve: ServeClient[],
  input: Partial<GatewayConfigInput> = {},
): Promise<{ app: ReturnType<typeof createGatewayApp>; services: GatewayServices }> {
  const config = resolveGatewayConfig({ logUrls: [], serveUrls: [], ...input });
  const services = createGatewayServices(config, await log.cluster(), log, serve, silent);
  await services.topology.refresh();
  return { app: createGatewayApp(services), services };
}

export interface ClusterFixture {
  log: LogFixture;
  serves: RunningServeNode[];
  gateway: GatewayHandle;
  url: string;
  stop(): Promise<void>;
}

/**
 * One log-node, two serve-nodes each hosting half the partitions, and a gateway, the serve-nodes
 * and the gateway reaching the log by its Kafka listener. `serveLogUrl` lets a test put something
 * (a slow proxy) between the serve-nodes and the log: it is given the listener's `host:port` and
 * answers the `kafka://` URL serve-node `index` is given.
 */
export async function startCluster(
  options: {
    partitions?: number;
    gateway?: Partial<GatewayConfigInput>;
    serveLogUrl?: (broker: string, index: number) => string;
    /** The URL the gateway is given for serve-node `index` (something in front of it). */
    serveUrl?: (url: string, index: number) => string;
    /** Both serve-nodes host every partition (replicas) instead of half each. */
    replicated?: boolean;
    /** The partitions serve-node `index` hosts, overriding the two options above. */
    hosted?: (index: number) => number[];
    /** Limits of both serve-nodes. */
    serve?: Partial<ServeNodeLimits>;
  } = {},
): Promise<ClusterFixture> {
  const partitions = options.partitions ?? 4;
  const log = await startLog(partitions);
  const half = Math.ceil(partitions / 2);
  const serveDirs: string[] = [];
  const serves: RunningServeNode[] = [];
  for (let i = 0; i < 2; i++) {
    const dir = await tempDir(`gw-serve${i}`);
    serveDirs.push(dir);
    const hosted =
      options.hosted?.(i) ??
      Array.from({ length: partitions }, (_, p) => p).filter(
        (p) => options.replicated || (i === 0 ? p < half : p >= half),
      );
    serves.push(
      await startServeNode({
        dataDir: dir,
        port: 0,
        logUrls: [options.serveLogUrl?.(log.broker, i) ?? log.url],
        partitions: hosted,
        limits: options.serve,
        logger: silent,
      }),
    );
  }
  const gateway = await startGateway(
    {
      logUrls: [log.url],
      serveUrls: serves.map((s, i) => options.serveUrl?.(s.url, i) ?? s.url),
      topologyRefreshMs: 200,
      ...options.gateway,
    },
    { logger: silent },
  );
  return {
    log,
    serves,
    gateway,
    url: gateway.url,
    async stop() {
      await gateway.stop();
      await Promise.all(serves.map((s) => s.stop()));
      await log.stop();
      await Promise.all(serveDirs.map((d) => rm(d, { recursive: true, force: true })));
    },
  };
}

export interface Answer<T = any> {
  status: number;
  body: T;
  token: string | null;
}

/** A small HTTP client for tests: JSON in, JSON out, the Tailbase-Token header kept. */
export async function call<T = any>(
  url: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Answer<T>> {
  const response = await fetch(url + path, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  return {
    status: response.status,
    body: text === '' ? null : JSON.parse(text),
    token: response.headers.get('tailbase-token'),
  };
}
