/**
 * `tailbase start` whose view processors cannot start (their directory under --data is a file)
 * exits 1 naming the cause, having stopped what it had started; before, its clean-up touched the
 * view host it had not got and reported "Cannot access 'views' before initialization" instead.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TAILBASE_BIN } from '../harness/spawn-node.js';
import { tempDir } from '../harness/temp-dir.js';

const START_WAIT_MS_MAX = 60_000;
const data = tempDir('start-views-failure');
afterAll(() => data.cleanup());

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
});
