// Proves the first five minutes work: `npm start` as the README says, the README's curl tour run
// as written with every answer checked, a kill -9 and restart that keeps every acknowledged write,
// and compose.yaml's cluster run as local processes, written to and read back from each serve-node.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startLocalCluster } from '../../bin/local-cluster.js';
import { HttpServeClient } from '../../shared/http-serve-client.js';
import { freePort, tempDir } from '../harness/index.js';
import { kcat, KCAT_INSTALLED } from '../harness/kafka.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const README = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
const START_TIMEOUT_MS = 60_000;

interface Started {
  child: ChildProcess;
  url: string;
  output: () => string;
}

/** `npm start`, in its own process group so kill -9 reaches the server and not just npm. */
async function npmStart(
  dataDir: string,
  port: number,
  kafkaPort: number,
  logLevel = 'warn',
): Promise<Started> {
  const child = spawn('npm', ['start'], {
    cwd: ROOT,
    detached: true,
    env: {
      ...process.env,
      TAILBASE_DATA: dataDir,
      TAILBASE_PORT: String(port),
      TAILBASE_KAFKA_PORT: String(kafkaPort),
      TAILBASE_LOG_LEVEL: logLevel,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`npm start did not get ready:\n${output}`)),
      START_TIMEOUT_MS,
    );
    const check = () => {
      const match = /tailbase is ready: (http:\/\/\S+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    child.stdout!.on('data', check);
    child.once('exit', (code) => reject(new Error(`npm start exited with ${code}:\n${output}`)));
  });
  return { child, url, output: () => output };
}

/** Signals npm and the server it started; resolves once both are gone (their pipes closed). */
function killGroup(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  return new Promise((resolve) => {
    if (child.stdout!.closed && child.stderr!.closed) return resolve();
    child.once('close', () => resolve());
    try {
      process.kill(-child.pid!, signal);
    } catch {
      resolve();
    }
  });
}

/** The README's tour block, with a comment line before each step turned into a step separator. */
function tourScript(url: string): { script: string; steps: string[] } {
  const block = /<!-- tour:start -->\s*```sh\n([\s\S]*?)```\s*<!-- tour:end -->/.exec(README);
  if (!block) throw new Error('README.md has no tour block');
  const steps: string[] = [];
  const lines = block[1].split('\n').map((line) => {
    if (!line.startsWith('#')) return line.replaceAll('http://127.0.0.1:8080', url);
    steps.push(line);
    return `echo; echo '@@step ${steps.length - 1}'`;
  });
  return { script: `set -euo pipefail\n${lines.join('\n')}\n`, steps };
}

/** Splits a step's output into the JSON values it printed (curl prints them back to back). */
function jsonValues(text: string): unknown[] {
  const values: unknown[] = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (ch === '\\') i++;
      else if (ch === '"') inString = false;
    } else if (ch === '"') {
      inString = true;
    } else if (ch === '{' || ch === '[') {
      if (depth++ === 0) start = i;
    } else if (ch === '}' || ch === ']') {
      if (--depth === 0) values.push(JSON.parse(text.slice(start, i + 1)));
    }
  }
  return values;
}

describe('running tailbase like a user', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  it('npm start, the README tour, kill -9 and restart keep every acknowledged write', async () => {
    const data = tempDir('readme-tour');
    cleanups.push(() => data.cleanup());
    const port = await freePort();
    const kafkaPort = await freePort();
    const first = await npmStart(data.path, port, kafkaPort);
    cleanups.push(() => killGroup(first.child, 'SIGKILL'));
    expect(first.url).toBe(`http://127.0.0.1:${port}`);

    const { script, steps } = tourScript(first.url);
    const run = spawnSync('bash', ['-c', script], { encoding: 'utf8', timeout: 60_000 });
    expect(run.status, `tour failed:\n${run.stderr}\n${run.stdout}`).toBe(0);
    const outputs = run.stdout
      .split(/@@step \d+\n/)
      .slice(1)
      .map(jsonValues);
    expect(outputs).toHaveLength(steps.length);
    const [write, keepToken, readOwn, search, bulk, scan, deleteAndFeed, status, rebuild, reread] =
      outputs as any[][];

    expect(write[0]).toMatchObject({
      key: 'the-log',
      offset: expect.any(Number),
      token: expect.any(String),
    });
    expect(keepToken).toEqual([]);
    expect(readOwn[0]).toMatchObject({ key: 'kafka', value: { title: 'Kafka' } });
    expect(search[0].total).toBeGreaterThanOrEqual(2);
    expect(search[0].hits.map((hit: { key: string }) => hit.key).sort()).toEqual([
      'kafka',
      'the-log',
    ]);
    expect(bulk[0]).toMatchObject({ count: 2 });
    expect(scan[0].items.map((item: { key: string }) => item.key)).toEqual(['fts5', 'kafka']);
    expect(scan[0].cursor).toEqual(expect.any(String));
    const [deleted, ...events] = deleteAndFeed;
    expect(deleted).toMatchObject({ key: 'fts5' });
    expect(events).toHaveLength(5);
    for (const event of events)
      expect(event).toMatchObject({ collection: 'books', token: expect.any(String) });
    const books = status[0].partitions.filter((p: { topic: string }) => p.topic === 'books');
    expect(books).toHaveLength(8);
    expect(rebuild[0]).toMatchObject({ node: 0, rebuilding: true });
    expect(reread[0]).toMatchObject({ key: 'the-log', value: { title: 'The Log' } });
    expect(first.output()).toContain(`Kafka: 127.0.0.1:${kafkaPort}`);
    if (KCAT_INSTALLED) {
      // The collection is a topic any Kafka client reads: every record the tour wrote, in order.
      const broker = `127.0.0.1:${kafkaPort}`;
      const keys = await kcat(['-C', '-b', broker, '-t', 'books', '-e', '-q', '-f', '%k\\n']);
      expect(keys.trim().split('\n').sort()).toEqual(
        ['fts5', 'fts5', 'kafka', 'lmdb', 'the-log'].sort(),
      );
    }

    const acknowledged = new Map<string, number>([[write[0].key, write[0].offset]]);
    await killGroup(first.child, 'SIGKILL');

    const second = await npmStart(data.path, port, kafkaPort, 'info');
    cleanups.push(() => killGroup(second.child, 'SIGTERM'));
    for (const [key, offset] of [...acknowledged, ['kafka', -1] as const, ['lmdb', -1] as const]) {
      const response = await fetch(
        `${second.url}/v1/collections/books/docs/${key}?consistency=strong`,
      );
      expect(response.status, key).toBe(200);
      const doc = (await response.json()) as { offset: number };
      if (offset >= 0) expect(doc.offset).toBe(offset);
    }
    const gone = await fetch(`${second.url}/v1/collections/books/docs/fts5?consistency=strong`);
    expect(gone.status).toBe(404);
    // SIGTERM: the stores close cleanly (npm itself reports the signal, so read the server's log).
    await killGroup(second.child, 'SIGTERM');
    expect(second.output(), second.output()).toContain('log-node closed');
    expect(second.output()).not.toContain('shutdown failed');
  });

  it("compose.yaml's cluster runs as local processes: write through its gateway, read from each serve-node", async () => {
    const data = tempDir('local-cluster');
    cleanups.push(() => data.cleanup());
    const cluster = await startLocalCluster({
      composeFile: path.join(ROOT, 'compose.yaml'),
      dataRoot: data.path,
      bin: path.join(ROOT, 'dist/bin/tailbase.js'),
      env: { ...process.env, TAILBASE_LOG_LEVEL: 'warn' },
    });
    cleanups.push(() => cluster.stop());
    const names = cluster.processes.map((p) => p.service.name);
    expect(names.sort()).toEqual(['gateway', 'log-1', 'log-2', 'log-3', 'serve-1', 'serve-2']);

    const auth = { authorization: 'Bearer dev-key-change-me' };
    const written: { key: string; partition: number; offset: number }[] = [];
    for (let i = 0; i < 24; i++) {
      const response = await fetch(`http://127.0.0.1:8080/v1/collections/notes/docs/n${i}`, {
        method: 'PUT',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ text: `note number ${i}` }),
      });
      expect(response.status).toBe(200);
      written.push((await response.json()) as { key: string; partition: number; offset: number });
    }
    expect(new Set(written.map((w) => w.partition)).size).toBeGreaterThan(3);

    const secret = 'dev-cluster-secret-change-me';
    // Internal routes refuse a call without the secret or with another one.
    for (const url of [
      'http://127.0.0.1:7071/internal/offsets',
      'http://127.0.0.1:7081/internal/status',
    ]) {
      expect((await fetch(url)).status, url).toBe(401);
      const wrong = await fetch(url, { headers: { 'tailbase-cluster-secret': `${secret}x` } });
      expect(wrong.status, url).toBe(401);
    }
    // A node refused by another reports the cluster as misconfigured, not the caller as unknown.
    const refused = await new HttpServeClient('http://127.0.0.1:7081', { clusterSecret: 'wrong' })
      .status()
      .catch((error: unknown) => error);
    expect(refused).toMatchObject({ status: 502, code: 'cluster_misconfigured' });
    for (const url of ['http://127.0.0.1:7081', 'http://127.0.0.1:7082']) {
      const serve = new HttpServeClient(url, { clusterSecret: secret });
      for (const { key, partition, offset } of written) {
        const result = await serve.get('notes', key, {
          waitFor: { [partition]: offset },
          waitMs: 10_000,
        });
        expect(JSON.parse(result.doc?.json ?? 'null'), `${url} ${key}`).toEqual({
          text: `note number ${key.slice(1)}`,
        });
      }
    }
    await cluster.stop();
  });
});

// Proves compose.yaml is a valid Compose file, as docker-compose itself reads it (Debian's
// docker-compose package; .ci/run installs it, a machine without it skips this check).
const dockerCompose = spawnSync('docker-compose', ['version'], { encoding: 'utf8' });
describe.skipIf(dockerCompose.status !== 0)('compose.yaml', () => {
  it('passes docker-compose config', () => {
    const result = spawnSync(
      'docker-compose',
      ['-f', path.join(ROOT, 'compose.yaml'), 'config', '-q'],
      {
        encoding: 'utf8',
      },
    );
    expect(result.status, result.stderr).toBe(0);
  });

  it('passes docker-compose config with the redpanda profile', () => {
    const result = spawnSync(
      'docker-compose',
      ['-f', path.join(ROOT, 'compose.yaml'), '--profile', 'redpanda', 'config', '-q'],
      { encoding: 'utf8' },
    );
    expect(result.status, result.stderr).toBe(0);
  });
});
