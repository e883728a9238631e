/**
 * librdkafka's mock cluster (a Kafka implementation nobody here wrote) as a child process: the C
 * helper kafka-mock/mock-cluster.c, compiled with cc against Debian's librdkafka-dev on first
 * use and cached under the OS temp directory by its source's hash. Commands go in on stdin, one
 * a line, each answered "ok" (see the helper's header for them).
 *
 *   const mock = await startMockCluster();      // three brokers, ids 1..3
 *   await mock.command('topic orders 3 3');     // 3 partitions, replication factor 3
 *   await mock.command('leader orders 0 2');
 *   await mock.stop();
 *
 * Without cc or librdkafka-dev the tests that need it skip, unless TAILBASE_REQUIRE_RDKAFKA_MOCK=1
 * (as CI sets), where they fail.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

const SOURCE_PATH = path.join(
  path.dirname(fileURLToPath(import.meta.url)),
  'kafka-mock/mock-cluster.c',
);
const START_WAIT_MS_MAX = 10_000;
const COMMAND_WAIT_MS_MAX = 5_000;
/** Kafka's ListOffsets API key. */
const LIST_OFFSETS = 2;

export interface MockCluster {
  /** host:port,... of its brokers. */
  bootstrap: string;
  /** Sends one command line; rejects unless the helper answers "ok". */
  command(line: string): Promise<void>;
  stop(): Promise<void>;
}

let built: string | null | undefined;

/** The helper's binary, built once per source; null when cc or librdkafka-dev is missing. */
function mockClusterBinary(): string | null {
  if (built !== undefined) return built;
  const flags = spawnSync('pkg-config', ['--cflags', '--libs', 'rdkafka'], { encoding: 'utf8' });
  if (flags.status !== 0 || !fs.existsSync('/usr/include/librdkafka/rdkafka_mock.h')) {
    built = null;
    return built;
  }
  const source = fs.readFileSync(SOURCE_PATH);
  const hash = crypto.createHash('sha256').update(source).digest('hex').slice(0, 16);
  const binary = path.join(os.tmpdir(), `tailbase-kafka-mock-${hash}`);
  if (!fs.existsSync(binary)) {
    const partial = `${binary}.${process.pid}`;
    const cc = spawnSync(
      'cc',
      ['-O1', '-o', partial, SOURCE_PATH, ...flags.stdout.trim().split(/\s+/)],
      { encoding: 'utf8' },
    );
    if (cc.status !== 0) throw new Error(`cc failed to build the mock cluster: ${cc.stderr}`);
    fs.renameSync(partial, binary);
  }
  built = binary;
  return built;
}

/** Whether mock-cluster tests run here (and must, when CI says so). */
export function mockClusterAvailable(): boolean {
  if (mockClusterBinary() !== null) return true;
  if (process.env.TAILBASE_REQUIRE_RDKAFKA_MOCK === '1') {
    throw new Error('librdkafka-dev (rdkafka_mock.h), pkg-config and cc are required');
  }
  return false;
}

export async function startMockCluster(brokers = 3): Promise<MockCluster> {
  const binary = mockClusterBinary();
  if (binary === null) throw new Error('the mock cluster cannot be built here');
  const child: ChildProcess = spawn(binary, [String(brokers)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = readline.createInterface({ input: child.stdout! });
  const waiting: ((line: string) => void)[] = [];
  lines.on('line', (line) => waiting.shift()?.(line));
  const nextLine = (waitMs: number) =>
    new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`the mock cluster did not answer in ${waitMs} ms`)),
        waitMs,
      );
      waiting.push((line) => {
        clearTimeout(timer);
        resolve(line);
      });
    });
  const first = await nextLine(START_WAIT_MS_MAX);
  const bootstrap = /^bootstrap (\S+)$/.exec(first)?.[1];
  if (bootstrap === undefined) throw new Error(`the mock cluster said ${first}`);
  let queue = Promise.resolve();
  const command = (line: string) => {
    const answered = queue.then(async () => {
      const answer = nextLine(COMMAND_WAIT_MS_MAX);
      child.stdin!.write(`${line}\n`);
      const said = await answer;
      if (said !== 'ok') throw new Error(`mock cluster: ${line}: ${said}`);
    });
    queue = answered.catch(() => undefined);
    return answered;
  };
  // librdkafka 2.0.2's mock answers ListOffsets v4 and later with 4 bytes a partition more than
  // Kafka's message spec (and tailbase's codec) has: its brokers offer v1-v3 only.
  await command(`apiversion ${LIST_OFFSETS} 1 3`);
  return {
    bootstrap,
    command,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.stdin!.end();
      await exited;
    },
  };
}
