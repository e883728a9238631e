// Proves the log is reached only by the Kafka protocol: `--log http://...` (a log-node URL of the
// internal HTTP log API, which is gone) makes serve-node, gateway and start exit at once with an
// error naming kafka://, before they listen; a later URL of another scheme is refused too; and
// the in-process starts refuse such URLs with the machine code invalid_log_url.
import { execFile } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { startGateway } from '../../gateway/index.js';
import { startServeNode } from '../../serve-node/index.js';
import { checkLogUrls } from '../../shared/log-connect.js';
import { createLogger } from '../../shared/logger.js';
import { TAILBASE_BIN, tempDir } from '../harness/index.js';

/** A CLI run that must end by itself: its exit code and output. */
function run(args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [TAILBASE_BIN, ...args],
      { timeout: 20_000, env: { ...process.env, TAILBASE_LOG_LEVEL: 'warn' } },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
        resolve({ code, output: `${stdout}${stderr}` });
      },
    );
  });
}

describe('--log names Kafka brokers only', () => {
  it.each([
    ['serve-node', ['--port', '0', '--log', 'http://127.0.0.1:7071']],
    ['gateway', ['--port', '0', '--log', 'http://127.0.0.1:7071', '--serve', 'http://127.0.0.1:1']],
    ['start', ['--port', '0', '--log', 'http://127.0.0.1:7071']],
    ['gateway', ['--port', '0', '--log', 'kafka://127.0.0.1:1,http://127.0.0.1:2', '--serve', 'x']],
  ])('%s %j exits with an error naming kafka://', async (role, args) => {
    const dir = tempDir('log-url');
    try {
      const data = role === 'gateway' ? [] : ['--data', dir.path];
      const { code, output } = await run([role, ...data, ...args]);
      expect(code, output).not.toBe(0);
      expect(output).toMatch(/kafka:\/\/host:port/);
      expect(output).toContain('http://127.0.0.1:');
      expect(output).not.toMatch(/listening on/);
    } finally {
      dir.cleanup();
    }
  });

  it('refuses an http:// log in process, as invalid_log_url', async () => {
    const silent = createLogger('test', 'silent');
    const dir = tempDir('log-url-serve');
    try {
      await expect(
        startServeNode({
          dataDir: dir.path,
          port: 0,
          logUrls: ['http://127.0.0.1:7071'],
          logger: silent,
        }),
      ).rejects.toMatchObject({ code: 'invalid_log_url' });
      await expect(
        startGateway(
          { port: 0, logUrls: ['http://127.0.0.1:7071'], serveUrls: [] },
          { logger: silent },
        ),
      ).rejects.toMatchObject({ code: 'invalid_log_url' });
    } finally {
      dir.cleanup();
    }
    expect(checkLogUrls(['kafka://a:1', 'b:2', 'kafka://c:3'])).toEqual([
      'kafka://a:1',
      'b:2',
      'kafka://c:3',
    ]);
    expect(() => checkLogUrls([])).toThrow(/kafka:\/\//);
    expect(() => checkLogUrls(['a:1'])).toThrow(/kafka:\/\//);
  });
});
