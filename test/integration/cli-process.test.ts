// Proves the installed `tailbase` binary keeps the token between real processes: `put` in one
// process, then `get` in another reads that write, and both exit promptly with code 0; and
// `tailbase --version` prints the package's version.
// Needs a build (`npx tsc -p tsconfig.json`) in which bin/cli.ts calls registerClientCommands.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TAILBASE_BIN } from '../harness/spawn-node.js';
import { startSystem, type System } from './cli-harness.js';

const run = promisify(execFile);
const cliJs = path.join(path.dirname(TAILBASE_BIN), 'cli.js');
const wired =
  fs.existsSync(cliJs) && fs.readFileSync(cliJs, 'utf8').includes('registerClientCommands');

let system: System;

beforeAll(async () => {
  if (wired) system = await startSystem(2);
});

afterAll(async () => {
  await system?.stop();
});

describe.skipIf(!wired)('tailbase binary', () => {
  it('put then get in two processes reads the write through the token file', async () => {
    const env = { ...process.env, TAILBASE_HOME: system.home, TAILBASE_URL: system.gatewayUrl };
    const options = { env, timeout: 20_000 };
    const put = await run('node', [TAILBASE_BIN, 'put', 'notes', 'n1', '{"text":"hi"}'], options);
    expect(put.stdout).toMatch(/^put notes\/n1 at partition \d+ offset \d+\n$/);
    expect(fs.existsSync(path.join(system.home, 'tokens.json'))).toBe(true);
    const get = await run('node', [TAILBASE_BIN, 'get', 'notes', 'n1', '--json'], options);
    expect(JSON.parse(get.stdout)).toMatchObject({ key: 'n1', value: { text: 'hi' } });
    await expect(run('node', [TAILBASE_BIN, 'get', 'notes'], options)).rejects.toMatchObject({
      code: 2,
    });
  });

  it('--version prints the version package.json declares, and so does -V', async () => {
    const { version } = JSON.parse(
      fs.readFileSync(path.join(path.dirname(TAILBASE_BIN), '..', '..', 'package.json'), 'utf8'),
    ) as { version: string };
    for (const flag of ['--version', '-V']) {
      const printed = await run('node', [TAILBASE_BIN, flag], { timeout: 20_000 });
      expect(printed.stdout).toBe(`${version}\n`);
    }
  });
});
