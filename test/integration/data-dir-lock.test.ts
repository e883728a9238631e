// Proves a data directory has one owner at a time: a second log-node or serve-node on it (in this
// process or another) fails naming the directory and the owner's pid, a lock left by a process
// that died (kill -9, or a pid that no longer runs) is taken over, and a clean stop removes it.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startLogNode, type RunningLogNode } from '../../log-node/index.js';
import { startServeNode, type RunningServeNode } from '../../serve-node/index.js';
import { currentBootId } from '../../shared/boot-id.js';
import { createLogger } from '../../shared/logger.js';
import {
  sleep,
  spawnNode,
  type SpawnedNode,
  type SpawnOptions,
  TAILBASE_BIN,
  tempDir,
  type TempDir,
} from '../harness/index.js';

const LOCK_FILE = 'tailbase.lock';
const silent = createLogger('test', 'silent');

const dirs: TempDir[] = [];
const stops: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
  for (const dir of dirs.splice(0)) dir.cleanup();
});

function dir(name: string): string {
  const made = tempDir(name);
  dirs.push(made);
  return made.path;
}

async function logNode(dataDir: string): Promise<RunningLogNode> {
  const running = await startLogNode({
    dataDir,
    port: 0,
    partitions: 1,
    logger: silent,
    kafka: { host: '127.0.0.1', port: 0 },
  });
  stops.push(() => running.stop());
  return running;
}

/** A serve-node on `log`'s Kafka listener. */
async function serveNode(dataDir: string, log: RunningLogNode): Promise<RunningServeNode> {
  const logUrls = [`kafka://127.0.0.1:${log.kafkaPort}`];
  const running = await startServeNode({ dataDir, logUrls, port: 0, logger: silent });
  stops.push(() => running.stop());
  return running;
}

async function spawned(
  role: string,
  args: string[],
  options: SpawnOptions = {},
): Promise<SpawnedNode> {
  const node = await spawnNode(role, args, options);
  stops.push(() => node.kill());
  return node;
}

/** The pid of a process that has already exited (and been reaped). */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', ''], { stdio: 'ignore' });
  expect(child.status).toBe(0);
  return child.pid!;
}

describe('data directory lock', () => {
  it('refuses a second in-process log-node on the same directory, naming the owner pid', async () => {
    const data = dir('lock-log');
    const first = await logNode(data);
    await expect(logNode(data)).rejects.toThrow(
      `data directory ${data} is in use by pid ${process.pid}`,
    );
    // The refused start left the owner's lock alone: it still serves, and a third start fails too.
    expect((await fetch(`${first.url}/readyz`)).status).toBe(200);
    await expect(logNode(data)).rejects.toThrow(`in use by pid ${process.pid}`);
  });

  it('refuses a second in-process serve-node on the same directory, naming the owner pid', async () => {
    const log = await logNode(dir('lock-serve-log'));
    const data = dir('lock-serve');
    await serveNode(data, log);
    await expect(serveNode(data, log)).rejects.toThrow(
      `data directory ${data} is in use by pid ${process.pid}`,
    );
  });

  it('removes the lock on a clean stop, so a restart on the same directory succeeds', async () => {
    const logData = dir('lock-stop-log');
    const serveData = dir('lock-stop-serve');
    const log = await logNode(logData);
    const serve = await serveNode(serveData, log);
    expect(fs.existsSync(path.join(logData, LOCK_FILE))).toBe(true);
    expect(fs.existsSync(path.join(serveData, LOCK_FILE))).toBe(true);
    await serve.stop();
    await log.stop();
    expect(fs.existsSync(path.join(logData, LOCK_FILE))).toBe(false);
    expect(fs.existsSync(path.join(serveData, LOCK_FILE))).toBe(false);
    const again = await logNode(logData);
    await serveNode(serveData, again);
  });

  it('takes over a lock naming a pid that no longer runs', async () => {
    const data = dir('lock-dead');
    const pid = deadPid();
    fs.writeFileSync(
      path.join(data, LOCK_FILE),
      JSON.stringify({ pid, bootId: currentBootId(), startTicks: null }) + '\n',
    );
    const running = await logNode(data);
    expect(JSON.parse(fs.readFileSync(path.join(data, LOCK_FILE), 'utf8')).pid).toBe(process.pid);
    await running.stop();
    expect(fs.existsSync(path.join(data, LOCK_FILE))).toBe(false);
  });

  it('takes over a lock whose owner was killed but not yet reaped (a zombie)', async () => {
    const data = dir('lock-zombie');
    // `sleep` becomes the parent of the inner shell and never waits for it. The inner shell exits
    // only when told to, on fd 3 (our pipe), once its parent is `sleep`: the outer shell would
    // reap a child that exited before the outer shell's exec.
    const parent = spawn('sh', ['-c', 'exec 3<&0; sh -c "read _ <&3" & echo $!; exec sleep 30'], {
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    stops.push(async () => parent.kill('SIGKILL'));
    const [line] = (await once(parent.stdout!, 'data')) as [Buffer];
    const pid = Number(line.toString().trim());
    while (fs.readFileSync(`/proc/${parent.pid}/comm`, 'utf8').trim() !== 'sleep') await sleep(5);
    parent.stdin!.write('\n');
    const stat = () => {
      const text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      return text.slice(text.lastIndexOf(')') + 2).split(' ');
    };
    while (stat()[0] !== 'Z') await sleep(5);
    const startTicks = stat()[19];
    fs.writeFileSync(
      path.join(data, LOCK_FILE),
      JSON.stringify({ pid, bootId: currentBootId(), startTicks }) + '\n',
    );
    await logNode(data);
    expect(JSON.parse(fs.readFileSync(path.join(data, LOCK_FILE), 'utf8')).pid).toBe(process.pid);
  });

  it('takes over a stale lock whose previous taker died mid-takeover, leaving its claim', async () => {
    const data = dir('lock-claim');
    const stale = JSON.stringify({ pid: deadPid(), bootId: currentBootId(), startTicks: null });
    fs.writeFileSync(path.join(data, LOCK_FILE), stale + '\n');
    // The claim that a starter takes before replacing a stale lock, named after the stale
    // lock's content (shared/data-dir-lock.ts); this one names a process that has exited.
    const key = createHash('sha256')
      .update(stale + '\n')
      .digest('hex')
      .slice(0, 32);
    fs.writeFileSync(
      path.join(data, `${LOCK_FILE}.${key}.0.claim`),
      JSON.stringify({ pid: deadPid(), bootId: currentBootId(), startTicks: null }) + '\n',
    );
    const running = await logNode(data);
    expect(JSON.parse(fs.readFileSync(path.join(data, LOCK_FILE), 'utf8')).pid).toBe(process.pid);
    expect(fs.readdirSync(data).filter((name) => name.startsWith(LOCK_FILE))).toEqual([LOCK_FILE]);
    await running.stop();
    expect(fs.existsSync(path.join(data, LOCK_FILE))).toBe(false);
  });

  it('takes over a lock written under an earlier boot even when its pid now runs', async () => {
    const data = dir('lock-boot');
    fs.writeFileSync(
      path.join(data, LOCK_FILE),
      JSON.stringify({ pid: process.ppid, bootId: 'an-earlier-boot', startTicks: null }) + '\n',
    );
    if (currentBootId() === null) return; // no boot id here: only the pid can be checked
    await logNode(data);
  });

  it('refuses a lock held by another live process', async () => {
    const data = dir('lock-live');
    const sleeper = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], {
      stdio: 'ignore',
    });
    stops.push(async () => {
      sleeper.kill('SIGKILL');
    });
    fs.writeFileSync(
      path.join(data, LOCK_FILE),
      JSON.stringify({ pid: sleeper.pid, bootId: currentBootId(), startTicks: null }) + '\n',
    );
    await expect(logNode(data)).rejects.toThrow(
      `data directory ${data} is in use by pid ${sleeper.pid}`,
    );
  });

  it('lets exactly one of several processes racing for a stale lock take it over', async () => {
    const data = dir('lock-race');
    fs.writeFileSync(
      path.join(data, LOCK_FILE),
      JSON.stringify({ pid: deadPid(), bootId: currentBootId(), startTicks: null }) + '\n',
    );
    const module = path.resolve(path.dirname(TAILBASE_BIN), '../shared/data-dir-lock.js');
    // Each racer reports, then holds what it got until its stdin closes (after all have reported).
    const script =
      `const { lockDataDir } = await import(${JSON.stringify(module)});` +
      `try { lockDataDir(${JSON.stringify(data)}); console.log('won'); }` +
      `catch (error) { console.log(error.code); }` +
      `process.stdin.resume();`;
    const racers = Array.from({ length: 8 }, () => runScript(script));
    const outcomes = (await Promise.all(racers.map((racer) => racer.outcome))).sort();
    for (const racer of racers) racer.child.stdin!.end();
    await Promise.all(racers.map((racer) => racer.exited));
    expect(outcomes).toEqual([...Array(7).fill('data_dir_in_use'), 'won']);
    expect(fs.readdirSync(data)).toEqual([]);
  });

  it('lets a second process fail with exit 1 and no stack trace, and restarts after kill -9', async () => {
    const data = dir('lock-process');
    const first = await spawned('log-node', ['--data', data, '--port', '0', '--partitions', '1']);
    const second = spawnSync(process.execPath, [TAILBASE_BIN, 'log-node', '--data', data], {
      encoding: 'utf8',
      env: { ...process.env, TAILBASE_LOG_LEVEL: 'warn' },
      timeout: 15_000,
    });
    expect(second.status).toBe(1);
    expect(second.stderr).toContain(`data directory ${data} is in use by pid ${first.pid}`);
    expect(second.stderr).not.toMatch(/\n\s+at /);

    expect(await first.kill('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
    expect(fs.existsSync(path.join(data, LOCK_FILE))).toBe(true);
    const restarted = await spawned('log-node', ['--data', data, '--port', '0']);
    const cluster = await fetch(`${restarted.url}/internal/cluster`);
    expect(cluster.status).toBe(200);
    expect(await restarted.stop()).toEqual({ code: 0, signal: null });
    expect(fs.existsSync(path.join(data, LOCK_FILE))).toBe(false);
  });

  it('refuses a second `tailbase start` on the same data directory', async () => {
    const data = dir('lock-start');
    const first = await spawned(
      'start',
      ['--data', data, '--port', '0', '--kafka-port', '0', '--partitions', '1'],
      { urlPattern: /tailbase is ready: (\S+)/ },
    );
    const second = spawnSync(
      process.execPath,
      [TAILBASE_BIN, 'start', '--data', data, '--port', '0', '--kafka-port', '0'],
      {
        encoding: 'utf8',
        env: { ...process.env, TAILBASE_LOG_LEVEL: 'warn' },
        timeout: 15_000,
      },
    );
    expect(second.status).toBe(1);
    expect(second.stderr).toContain(
      `data directory ${path.join(data, 'log')} is in use by pid ${first.pid}`,
    );
  });
});

/** Runs an ES module script in a new node process: its first line of output, and its exit. */
function runScript(script: string) {
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const outcome = new Promise<string>((resolve, reject) => {
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
      if (output.includes('\n')) resolve(output.split('\n')[0]!);
    });
    child.once('exit', (code) => reject(new Error(`racer exited (${code}) before reporting`)));
  });
  return { child, outcome, exited };
}
