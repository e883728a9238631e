/**
 * Real processes under test: the suite starts each one on a loopback port it picked, waits for
 * readiness, reads its peak memory from /proc, and always stops it, so no benchmark leaves a
 * server behind.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';

const READY_WAIT_MS_MAX = 15_000;
const READY_POLL_MS = 50;
const STOP_WAIT_MS_MAX = 5_000;
const OUTPUT_TAIL_BYTES_MAX = 4096;

/** The compiled CLI, beside this file's own compiled folder (dist/bench -> dist/bin). */
export const TAILBASE_BIN = fileURLToPath(new URL('../bin/tailbase.js', import.meta.url));

export interface RunningProcess {
  url: string;
  pid: number;
  /** Peak resident set since start or the last resetPeakRss(), from /proc (0 when unknown). */
  peakRssBytes(): number;
  resetPeakRss(): void;
  /** User + system CPU seconds the process has used so far. */
  cpuSeconds(): number;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export function readPeakRssBytes(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const match = /^VmHWM:\s+(\d+)\s+kB/m.exec(status);
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** Clock ticks are 100 Hz on every Linux this runs on (getconf CLK_TCK). */
export const CLOCK_TICKS_PER_S = 100;

/** User + system clock ticks from a /proc stat file (a process's or a thread's); throws if gone. */
export function readStatTicks(path: string): number {
  const stat = readFileSync(path, 'utf8');
  // Fields after the parenthesized command name; utime and stime are fields 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

export function readCpuSeconds(pid: number): number {
  try {
    return readStatTicks(`/proc/${pid}/stat`) / CLOCK_TICKS_PER_S;
  } catch {
    return 0;
  }
}

function resetPeakRss(pid: number): void {
  try {
    // Writing 5 to clear_refs resets VmHWM to the current RSS (Linux >= 4.0).
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
  } catch {
    // Without the permission the peak stays cumulative since start, which still bounds it.
  }
}

export interface SpawnOptions {
  /** The executable; this Node binary when absent. */
  command?: string;
  args: string[];
  port: number;
  /** An HTTP path that answers 2xx once the server is ready... */
  readyPath?: string;
  /** ...or a probe for servers that do not speak HTTP. */
  ready?: () => boolean;
  env?: Record<string, string>;
  /** Run as this user (root starting a server that refuses root, e.g. postgres). */
  uid?: number;
  gid?: number;
  /** Past this without readiness the start fails (default READY_WAIT_MS_MAX). */
  readyWaitMsMax?: number;
}

async function httpReady(url: string): Promise<boolean> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(1000) });
    await response.arrayBuffer();
    return response.ok;
  } catch {
    return false;
  }
}

async function waitReady(
  probe: () => Promise<boolean>,
  child: ChildProcess,
  output: () => string,
  waitMsMax: number,
): Promise<void> {
  const deadline = Date.now() + waitMsMax;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`process exited before it was ready (${child.exitCode}): ${output()}`);
    }
    if (await probe()) return;
    await new Promise((resolve) => setTimeout(resolve, READY_POLL_MS));
  }
  throw new Error(`not ready after ${waitMsMax} ms: ${output()}`);
}

/** Every server started and not stopped yet: killed when the bench exits, whatever the path. */
const running = new Set<ChildProcess>();

/**
 * Kills what is still running (a group that timed out leaves its servers behind otherwise);
 * `process.exit` skips `finally` blocks, so run.ts calls this before it exits.
 */
export function killRunningServers(): void {
  for (const child of running) child.kill('SIGKILL');
  running.clear();
}

export async function spawnServer(options: SpawnOptions): Promise<RunningProcess> {
  const child = spawn(options.command ?? process.execPath, options.args, {
    env: { ...process.env, TAILBASE_LOG_LEVEL: 'warn', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    uid: options.uid,
    gid: options.gid,
  });
  running.add(child);
  let tail = '';
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-OUTPUT_TAIL_BYTES_MAX);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      running.delete(child);
      resolve();
    }),
  );
  const url = `http://127.0.0.1:${options.port}`;
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_WAIT_MS_MAX);
    await exited;
    clearTimeout(timer);
  };
  try {
    const { ready, readyPath } = options;
    const probe = ready ? async () => ready() : () => httpReady(url + (readyPath ?? '/'));
    await waitReady(probe, child, () => tail, options.readyWaitMsMax ?? READY_WAIT_MS_MAX);
  } catch (error) {
    await stop();
    throw error;
  }
  const pid = child.pid ?? 0;
  return {
    url,
    pid,
    peakRssBytes: () => readPeakRssBytes(pid),
    resetPeakRss: () => resetPeakRss(pid),
    cpuSeconds: () => readCpuSeconds(pid),
    stop,
  };
}

/**
 * `tailbase <role> --port P ...flags` on a free loopback port, ready once `readyPath` answers 2xx:
 * every node a benchmark measures is a process of its own, so the load client never shares its
 * event loop.
 */
export async function spawnTailbase(
  role: 'log-node' | 'serve-node' | 'gateway',
  flags: string[],
  options: { readyPath?: string; env?: Record<string, string> } = {},
): Promise<RunningProcess> {
  const port = await freePort();
  return spawnServer({
    // The Kafka listener only where a benchmark asks for it (it names --kafka-port itself).
    args: [
      TAILBASE_BIN,
      role,
      '--port',
      String(port),
      ...(role === 'log-node' && !flags.includes('--kafka-port') ? ['--kafka-port', 'off'] : []),
      ...flags,
    ],
    port,
    readyPath: options.readyPath ?? '/readyz',
    env: options.env,
  });
}

/** The log-node the benchmarks write to: fsync=always, whatever the environment says. */
export function spawnLogNode(
  dataDir: string,
  partitions: number,
  flags: string[] = [],
): Promise<RunningProcess> {
  return spawnTailbase(
    'log-node',
    ['--data', dataDir, '--partitions', String(partitions), ...flags],
    { env: { TAILBASE_FSYNC: 'always' } },
  );
}

export function tailbaseBuilt(): boolean {
  return existsSync(TAILBASE_BIN);
}
