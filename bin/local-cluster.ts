/**
 * `tailbase cluster`: the topology of compose.yaml as local processes, started in dependency
 * order, each waited on through its own healthcheck, logs in <data>/<service>.log.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { onShutdownSignal } from '../shared/cli-options.js';
import { createLogger } from '../shared/logger.js';
import { readComposeServices, type LocalService } from './compose-services.js';

const TAILBASE_BIN = fileURLToPath(new URL('./tailbase.js', import.meta.url));
const STOP_GRACE_MS = 30_000;

export interface RunningProcess {
  service: LocalService;
  child: ChildProcess;
  logFile: string;
}

export interface LocalCluster {
  processes: RunningProcess[];
  stop(): Promise<void>;
}

export interface LocalClusterOptions {
  composeFile: string;
  dataRoot: string;
  env?: NodeJS.ProcessEnv;
  log?: (line: string) => void;
  /** The tailbase command to run; the one beside this module by default. */
  bin?: string;
}

export async function startLocalCluster(options: LocalClusterOptions): Promise<LocalCluster> {
  const env = options.env ?? process.env;
  const services = readComposeServices(options.composeFile, options.dataRoot, env);
  fs.mkdirSync(options.dataRoot, { recursive: true });
  const processes: RunningProcess[] = [];
  const stop = async () => {
    for (const running of [...processes].reverse()) await stopProcess(running.child);
  };
  try {
    for (const service of services) {
      if (service.dataDir) fs.mkdirSync(service.dataDir, { recursive: true });
      const logFile = path.join(options.dataRoot, `${service.name}.log`);
      const out = fs.openSync(logFile, 'a');
      const child = spawn(process.execPath, [options.bin ?? TAILBASE_BIN, ...service.args], {
        env: { ...env, ...service.env },
        stdio: ['ignore', out, out],
      });
      fs.closeSync(out);
      processes.push({ service, child, logFile });
      await waitHealthy(service, child, logFile);
      options.log?.(`${service.name} is healthy (pid ${child.pid}, log ${logFile})`);
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { processes, stop };
}

async function waitHealthy(
  service: LocalService,
  child: ChildProcess,
  logFile: string,
): Promise<void> {
  if (!service.healthcheck) return;
  const [command, ...args] = service.healthcheck;
  for (let attempt = 0; attempt < service.healthcheckRetries; attempt++) {
    if (child.exitCode !== null) {
      throw new Error(`${service.name} exited with ${child.exitCode}:\n${logTail(logFile)}`);
    }
    const resolved = command === 'node' ? process.execPath : command;
    if (spawnSync(resolved, args, { stdio: 'ignore', timeout: 5000 }).status === 0) return;
    await new Promise((resolve) => setTimeout(resolve, service.healthcheckIntervalMs));
  }
  throw new Error(`${service.name} did not become healthy:\n${logTail(logFile)}`);
}

const LOG_TAIL_BYTES = 2000;

function logTail(logFile: string): string {
  const text = fs.readFileSync(logFile, 'utf8');
  return text.slice(-LOG_TAIL_BYTES);
}

function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

export function registerClusterCommand(program: Command): void {
  program
    .command('cluster')
    .description("run compose.yaml's topology as local processes on 127.0.0.1")
    .option('--file <compose.yaml>', 'compose file', 'compose.yaml')
    .option('--data <dir>', 'root of the services’ data directories and logs', './data-cluster')
    .action(async (flags: { file: string; data: string }) => {
      const cluster = await startLocalCluster({
        composeFile: flags.file,
        dataRoot: flags.data,
        log: (line) => process.stdout.write(`${line}\n`),
      });
      const gateway = cluster.processes.find((p) => p.service.name === 'gateway');
      const port = gateway?.service.args[gateway.service.args.indexOf('--port') + 1];
      process.stdout.write(
        `cluster ready: gateway on http://127.0.0.1:${port} (API key from TAILBASE_API_KEYS in compose.yaml)\n`,
      );
      let stopping = false;
      onShutdownSignal(createLogger('cluster'), () => {
        stopping = true;
        return cluster.stop();
      });
      for (const { child, service } of cluster.processes) {
        child.once('exit', (code) => {
          if (!stopping) process.stderr.write(`${service.name} exited (${code}); see its log\n`);
        });
      }
    });
}
