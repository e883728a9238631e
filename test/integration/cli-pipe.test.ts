// Proves the `tailbase` binary stops quietly when its stdout pipe is closed early, like
// `tailbase tail --from start | head -2`: exit 0 and nothing on stderr, no 'write EPIPE' trace.
// Needs a build (`npx tsc -p tsconfig.json`).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TAILBASE_BIN } from '../harness/spawn-node.js';
import { runCli } from '../unit/client-runner.js';
import { startSystem, type System } from './cli-harness.js';

const EVENTS = 3000;
let system: System;

beforeAll(async () => {
  system = await startSystem(2);
  // Far more output than a pipe buffers (64 KiB), so the writer is still writing when it closes.
  const lines = Array.from({ length: EVENTS }, (_, i) =>
    JSON.stringify({ key: `k${i}`, value: { text: 'x'.repeat(100) } }),
  );
  const load = await runCli(['bulk', 'piped', '--url', system.gatewayUrl], {
    home: system.home,
    stdin: lines.join('\n') + '\n',
  });
  expect(load.code).toBe(0);
}, 30_000);

afterAll(async () => {
  await system?.stop();
});

describe.skipIf(!fs.existsSync(TAILBASE_BIN))('tailbase writing to a closed pipe', () => {
  it('tail | head: exits 0 with nothing on stderr once the reader is gone', async () => {
    const child = spawn(
      process.execPath,
      [TAILBASE_BIN, 'tail', '--from', 'start', '--limit', String(EVENTS), '--json'],
      {
        env: { ...process.env, TAILBASE_HOME: system.home, TAILBASE_URL: system.gatewayUrl },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
    // Read the first piece of output, then close the read end, as `head` does.
    child.stdout.once('data', () => child.stdout.destroy());
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(stderr).toBe('');
    expect(code).toBe(0);
  }, 30_000);
});
