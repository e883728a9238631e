/**
 * `tailbase start` whose view processors cannot start (their directory under --data is a file)
 * exits 1 naming the cause, having stopped what it had started; before, its clean-up touched the
 * view host it had not got and reported "Cannot access 'views' before initialization" instead.
 * Started in-process, the failed start rejects and leaves nothing holding the caller's event
 * loop (before, the ports to the view thread stayed open with their listeners).
 */
import { execFile, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { TAILBASE_BIN } from '../harness/spawn-node.js';
import { tempDir } from '../harness/temp-dir.js';

const START_WAIT_MS_MAX = 60_000;
const data = tempDir('start-views-failure');
const inProcess = tempDir('start-views-failure-in-process');
afterAll(() => {
  data.cleanup();
  inProcess.cleanup();
});

describe('tailbase start when the view processors cannot start', () => {
  it('exits 1 with the cause', async () => {
    writeFileSync(path.join(data.path, 'views'), 'not a directory');
    const { code, stderr } = await new Promise<{ code: number | null; stderr: string }>(
      (resolve) => {
        execFile(
          process.execPath,
          [TAILBASE_BIN, 'start', '--data', data.path, '--port', '0', '--kafka-port', 'off'],
          { timeout: START_WAIT_MS_MAX, env: { ...process.env, TAILBASE_LOG_LEVEL: 'warn' } },
          (error, _stdout, stderr) => resolve({ code: error ? (error.code as number) : 0, stderr }),
        );
      },
    );
    expect(code).toBe(1);
    expect(stderr).toContain(
      `EEXIST: file already exists, mkdir '${path.join(data.path, 'views')}'`,
    );
    expect(stderr).not.toContain('before initialization');
  });

  it('started in-process, rejects and lets the process exit', async () => {
    writeFileSync(path.join(inProcess.path, 'views'), 'not a directory');
    const embedded = pathToFileURL(path.join(path.dirname(TAILBASE_BIN), 'embedded.js')).href;
    // Exits by itself only if the failed start left no port or handle open.
    const script = `
      const { startEmbedded } = await import(${JSON.stringify(embedded)});
      await startEmbedded({
        dataDir: ${JSON.stringify(inProcess.path)}, host: '127.0.0.1', port: 0, kafkaPort: null,
        readyWaitMsMax: 10000, readThreads: 0,
      }).then(() => console.log('started'), (error) => console.log('rejected: ' + error.message));
    `;
    const { code, signal, stdout } = await new Promise<{
      code: number | null;
      signal: NodeJS.Signals | null;
      stdout: string;
    }>((resolve) => {
      // A file, not --eval: the node threads inherit the process's execArgv.
      const file = path.join(inProcess.path, 'start.mjs');
      writeFileSync(file, script);
      const child = spawn(process.execPath, [file], {
        env: { ...process.env, TAILBASE_LOG_LEVEL: 'fatal' },
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
      const timer = setTimeout(() => child.kill('SIGKILL'), START_WAIT_MS_MAX);
      child.on('exit', (exitCode, exitSignal) => {
        clearTimeout(timer);
        resolve({ code: exitCode, signal: exitSignal, stdout: out });
      });
    });
    expect(stdout).toMatch(/rejected: .*EEXIST/);
    expect({ code, signal }).toEqual({ code: 0, signal: null });
  });
});
