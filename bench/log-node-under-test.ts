/**
 * Starts the log-node the benchmark measures: a real `tailbase log-node` process when the CLI is
 * built (the honest measurement, since the load client must not share its event loop), else the
 * in-process startLogNode, labelled as such; a clear skip when neither is built yet.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  TAILBASE_BIN,
  freePort,
  readCpuSeconds,
  readPeakRssBytes,
  spawnServer,
} from './processes.js';

export interface LogNodeUnderTest {
  url: string;
  mode: 'process' | 'in-process';
  peakRssBytes(): number;
  cpuSeconds(): number;
  stop(): Promise<void>;
}

interface StartLogNode {
  startLogNode(config: {
    dataDir: string;
    host?: string;
    port?: number;
    partitions?: number;
    fsync?: 'always';
  }): Promise<{ url: string; stop(): Promise<void> }>;
}

const LOG_NODE_MODULE = new URL('../log-node/index.js', import.meta.url);

export function logNodeAvailability(): string | null {
  if (existsSync(TAILBASE_BIN) || existsSync(fileURLToPath(LOG_NODE_MODULE))) return null;
  return 'skipped: not built yet (neither dist/bin/tailbase.js nor dist/log-node/index.js)';
}

async function binHasLogNode(): Promise<boolean> {
  if (!existsSync(TAILBASE_BIN)) return false;
  const { spawnSync } = await import('node:child_process');
  const help = spawnSync(process.execPath, [TAILBASE_BIN, '--help'], { encoding: 'utf8' });
  return `${help.stdout}${help.stderr}`.includes('log-node');
}

export async function startLogNodeUnderTest(
  dataDir: string,
  partitions: number,
): Promise<LogNodeUnderTest> {
  if (await binHasLogNode()) {
    const port = await freePort();
    const child = await spawnServer({
      args: [
        TAILBASE_BIN,
        'log-node',
        '--data',
        dataDir,
        '--port',
        String(port),
        '--partitions',
        String(partitions),
      ],
      port,
      readyPath: '/readyz',
      env: { TAILBASE_FSYNC: 'always' },
    });
    return { ...child, mode: 'process' };
  }
  process.env.TAILBASE_LOG_LEVEL ??= 'warn';
  // A computed specifier, so the suite compiles before log-node/ exists.
  const module = (await import(LOG_NODE_MODULE.href)) as StartLogNode;
  const node = await module.startLogNode({ dataDir, port: 0, partitions, fsync: 'always' });
  return {
    url: node.url,
    mode: 'in-process',
    peakRssBytes: () => readPeakRssBytes(process.pid),
    cpuSeconds: () => readCpuSeconds(process.pid),
    stop: () => node.stop(),
  };
}
