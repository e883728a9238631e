/**
 * A whole tailbase in the test process for the CLI's tests: a log-node (reached by its Kafka
 * listener), a serve-node and a gateway on loopback ports, each in a temp dir; stop() stops them
 * and removes the dirs.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGateway } from '../../gateway/index.js';
import { openLogNode } from '../../log-node/index.js';
import { startServeNode } from '../../serve-node/index.js';
import { createLogger } from '../../shared/logger.js';

const silent = createLogger('test', 'silent');

export interface System {
  gatewayUrl: string;
  serveUrl: string;
  home: string;
  /** Stops the gateway and starts another on the same port (a dropped change feed, say). */
  restartGateway(): Promise<void>;
  stop(): Promise<void>;
}

export async function startSystem(partitions: number): Promise<System> {
  const dirs = await Promise.all(
    ['log', 'serve', 'home'].map((name) => mkdtemp(join(tmpdir(), `tailbase-cli-${name}-`))),
  );
  const [logDir, serveDir, home] = dirs;
  const log = await openLogNode({
    dataDir: logDir,
    partitions,
    logger: silent,
    kafka: { host: '127.0.0.1', port: 0 },
  });
  const logUrls = [`kafka://127.0.0.1:${log.kafkaPort}`];
  const serve = await startServeNode({ dataDir: serveDir, port: 0, logUrls, logger: silent });
  const gatewayInput = { port: 0, logUrls, serveUrls: [serve.url] };
  let gateway = await startGateway(gatewayInput, { logger: silent });
  const port = Number(new URL(gateway.url).port);
  return {
    get gatewayUrl() {
      return gateway.url;
    },
    serveUrl: serve.url,
    home,
    async restartGateway() {
      await gateway.stop();
      gateway = await startGateway({ ...gatewayInput, port }, { logger: silent });
    },
    async stop() {
      await gateway.stop();
      await serve.stop();
      await log.stop();
      await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
    },
  };
}
