/**
 * Runs `node dist/bin/tailbase.js <role> ...args` as a real child process, the way a cluster
 * runs it, so crash tests can kill -9 it. Needs a build (`npx tsc -p tsconfig.json`).
 *
 *   const node = await spawnNode('log-node', ['--data', dir, '--port', '0']);
 *   await fetch(node.url + '/internal/offsets');
 *   await node.kill();          // SIGKILL by default; resolves once the process is gone
 *   await node.stop();          // SIGTERM, then SIGKILL if it does not exit in time
 *
 * Every child is killed when the test process exits, so a failed test leaves none behind.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const TAILBASE_BIN = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../../dist/bin/tailbase.js',
);

export interface SpawnOptions {
  /** Added to the inherited environment; TAILBASE_LOG_LEVEL defaults to `warn`. */
  env?: Record<string, string>;
  /** Wait for GET /readyz to answer 200 (default); false: only for the listening line. */
  waitReady?: boolean;
  readyTimeoutMs?: number;
  /** Finds the URL in stdout; the first capture group is the URL. */
  urlPattern?: RegExp;
}

export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface SpawnedNode {
  url: string;
  pid: number;
  /** Sends a signal (SIGKILL by default) and resolves once the process has exited. */
  kill(signal?: NodeJS.Signals): Promise<ExitStatus>;
  /** SIGTERM (a clean shutdown), SIGKILL after timeoutMs; resolves with how it exited. */
  stop(timeoutMs?: number): Promise<ExitStatus>;
  /** The last OUTPUT_BYTES_MAX of stdout and stderr, interleaved, for failure messages. */
  output(): string;
  exited: Promise<ExitStatus>;
}

const OUTPUT_BYTES_MAX = 64 * 1024;
const READY_POLL_MS = 20;
const STOP_TIMEOUT_MS = 10_000;
const running = new Set<ChildProcess>();

process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

export async function spawnNode(
  role: string,
  args: readonly string[],
  options: SpawnOptions = {},
): Promise<SpawnedNode> {
  if (!fs.existsSync(TAILBASE_BIN)) {
    throw new Error(`${TAILBASE_BIN} is missing: build first (npx tsc -p tsconfig.json)`);
  }
  // A log-node (alone or in `tailbase start`) listens for Kafka on 9092 unless told otherwise;
  // tests run side by side, so each takes a free port of its own unless it names one.
  const kafka =
    (role === 'log-node' || role === 'start') && !args.includes('--kafka-port')
      ? ['--kafka-port', '0']
      : [];
  const child = spawn(process.execPath, [TAILBASE_BIN, role, ...args, ...kafka], {
    env: { ...process.env, TAILBASE_LOG_LEVEL: 'warn', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let output = '';
  const append = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-OUTPUT_BYTES_MAX);
  };
  child.stdout!.on('data', append);
  child.stderr!.on('data', append);
  const exited = new Promise<ExitStatus>((resolve) => {
    child.once('exit', (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    });
  });
  const describe = () => `${role} ${args.join(' ')} (pid ${child.pid}) output:\n${output}`;

  const pattern = options.urlPattern ?? /listening on (https?:\/\/\S+)/;
  const timeoutMs = options.readyTimeoutMs ?? 15_000;
  const deadline = Date.now() + timeoutMs;
  let url: string | null = null;
  let exitStatus: ExitStatus | null = null;
  void exited.then((status) => (exitStatus = status));
  while (url === null) {
    if (exitStatus !== null) throw new Error(`exited before listening: ${describe()}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`no listening line within ${timeoutMs} ms: ${describe()}`);
    }
    url = pattern.exec(output)?.[1] ?? null;
    if (url === null) await sleep(READY_POLL_MS);
  }
  if (options.waitReady ?? true) {
    for (;;) {
      if (exitStatus !== null) throw new Error(`exited before ready: ${describe()}`);
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`/readyz not 200 within ${timeoutMs} ms: ${describe()}`);
      }
      const ok = await fetch(`${url}/readyz`).then(
        (response) => response.ok,
        () => false,
      );
      if (ok) break;
      await sleep(READY_POLL_MS);
    }
  }

  const kill = async (signal: NodeJS.Signals = 'SIGKILL') => {
    if (exitStatus === null) child.kill(signal);
    return exited;
  };
  return {
    url,
    pid: child.pid!,
    kill,
    stop: async (stopTimeoutMs = STOP_TIMEOUT_MS) => {
      const timer = setTimeout(() => child.kill('SIGKILL'), stopTimeoutMs);
      try {
        return await kill('SIGTERM');
      } finally {
        clearTimeout(timer);
      }
    },
    output: () => output,
    exited,
  };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
