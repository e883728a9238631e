// Proves the log format follows TAILBASE_LOG_FORMAT when set and otherwise whether stderr is a
// terminal (pretty) or a pipe or file (JSON), through the real logger in a real process, and that
// `tailbase start`'s ready lines keep the first line scripts read while naming the console.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { readyBanner } from '../../bin/ready-banner.js';
import { kafkaBrokerOf } from '../harness/kafka.js';
import { chooseLogFormat } from '../../shared/logger.js';

const LOGGER = pathToFileURL(
  path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../dist/shared/logger.js'),
).href;

/** One info line logged by the built logger in a child whose stderr is a pipe. */
function logOneLine(env: Record<string, string>) {
  const script =
    `const { createLogger, flushLogs } = await import(${JSON.stringify(LOGGER)});` +
    `createLogger('probe').child({ role: 'gateway' }).info({ port: 8080 }, 'hello there');` +
    'flushLogs();';
  const { TAILBASE_LOG_FORMAT: _, ...inherited } = process.env;
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    env: { ...inherited, TAILBASE_LOG_LEVEL: 'info', ...env },
    encoding: 'utf8',
  });
  return { status: child.status, stderr: child.stderr };
}

describe('chooseLogFormat', () => {
  it('answers pretty for a terminal and JSON for a pipe or file when nothing is set', () => {
    expect(chooseLogFormat(undefined, true)).toBe('pretty');
    expect(chooseLogFormat(undefined, false)).toBe('json');
    expect(chooseLogFormat('', false)).toBe('json');
  });

  it('lets TAILBASE_LOG_FORMAT win either way', () => {
    expect(chooseLogFormat('json', true)).toBe('json');
    expect(chooseLogFormat('pretty', false)).toBe('pretty');
  });

  it('refuses an unknown format naming the variable and the formats it takes', () => {
    expect(() => chooseLogFormat('text', true)).toThrow(
      /TAILBASE_LOG_FORMAT must be one of json, pretty, not text/,
    );
  });
});

describe('the logger in a process', () => {
  it('writes JSON lines to a pipe', () => {
    const { status, stderr } = logOneLine({});
    expect(status).toBe(0);
    const line = JSON.parse(stderr.trim());
    expect(line).toMatchObject({ level: 30, name: 'probe', role: 'gateway', msg: 'hello there' });
  });

  it('writes pretty lines to a pipe with TAILBASE_LOG_FORMAT=pretty, uncoloured', () => {
    const { status, stderr } = logOneLine({ TAILBASE_LOG_FORMAT: 'pretty' });
    expect(status).toBe(0);
    expect(stderr).toMatch(/^\[\d\d:\d\d:\d\d\] INFO: gateway: hello there \{"port":8080\}\n$/);
  });

  it("writes out a worker thread's last line though the thread pool is busy when it ends", () => {
    // A loaded node's fsyncs fill libuv's pool; an asynchronous write queued behind them is
    // cancelled when the main thread terminates the worker on its answer (bin/node-thread.ts).
    const worker =
      `const { createLogger, flushLogs } = await import(${JSON.stringify(LOGGER)});` +
      `const { parentPort } = await import('node:worker_threads');` +
      `parentPort.once('message', () => {` +
      `  createLogger('probe').info('closed'); flushLogs(); parentPort.postMessage('stopped');` +
      `});` +
      `parentPort.postMessage('ready');`;
    const script =
      `const { Worker } = await import('node:worker_threads');` +
      `const { pbkdf2 } = await import('node:crypto');` +
      `const worker = new Worker(${JSON.stringify(worker)}, { eval: true });` +
      `await new Promise((resolve) => worker.once('message', resolve));` +
      `pbkdf2('busy', 'pool', 1_000_000, 64, 'sha512', () => undefined);` +
      `worker.postMessage('stop');` +
      `await new Promise((resolve) => worker.once('message', resolve));` +
      'await worker.terminate();';
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      env: { ...process.env, TAILBASE_LOG_LEVEL: 'info', UV_THREADPOOL_SIZE: '1' },
      encoding: 'utf8',
    });
    expect(child.status).toBe(0);
    expect(child.stderr).toMatch(/"msg":"closed"/);
  });

  it('exits with the message naming the variable for an unknown format', () => {
    const { status, stderr } = logOneLine({ TAILBASE_LOG_FORMAT: 'text' });
    expect(status).not.toBe(0);
    expect(stderr).toMatch(/TAILBASE_LOG_FORMAT must be one of json, pretty, not text/);
  });
});

describe('readyBanner', () => {
  const facts = { url: 'http://127.0.0.1:8080', host: '127.0.0.1', dataDir: '/srv/data' };

  it('keeps the first line scripts read and names the console, API and Kafka port', () => {
    const text = readyBanner({ ...facts, kafkaPort: 9092 });
    const [first, ...rest] = text.split('\n');
    expect(first).toBe(
      'tailbase is ready: http://127.0.0.1:8080  Kafka: 127.0.0.1:9092  (data in /srv/data)',
    );
    expect(kafkaBrokerOf(text)).toBe('127.0.0.1:9092');
    expect(rest.join('\n')).toMatch(/console +http:\/\/127\.0\.0\.1:8080\/ /);
    expect(rest.join('\n')).toMatch(/Kafka +127\.0\.0\.1:9092 /);
  });

  it('says the Kafka listener is off when it is', () => {
    const text = readyBanner({ ...facts, kafkaPort: null });
    expect(text.split('\n')[0]).toBe(
      'tailbase is ready: http://127.0.0.1:8080  (data in /srv/data)',
    );
    expect(text).toMatch(/Kafka +off/);
  });
});
