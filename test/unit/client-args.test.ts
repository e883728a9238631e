// Proves the client commands' argument handling: usage errors exit 2 before any request is sent
// (the URL points at a closed port, so a request would exit 1 instead), and --help exits 0.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../harness/free-port.js';
import { runCli } from './client-runner.js';

const home = fs.mkdtempSync(path.join(os.tmpdir(), 'tailbase-client-args-'));
// A port nothing listens on: a request there is refused.
let closed: string;
const run = (args: string[], stdin?: string) =>
  runCli([...args, '--url', closed], { home, ...(stdin === undefined ? {} : { stdin }) });

beforeAll(async () => {
  closed = `http://127.0.0.1:${await freePort()}`;
});

afterAll(() => fs.rmSync(home, { recursive: true, force: true }));

describe('client command arguments', () => {
  it.each([
    [['get', 'users']],
    [['put']],
    [['scan', 'users', '--limit', '0']],
    [['scan', 'users', '--limit', 'ten']],
    [['search', 'users', 'q', '--offset', '-1']],
    [['get', 'users', 'k', '--consistency', 'sometimes']],
    [['get', 'users', 'k', '--timeout-ms', '0']],
    [['get', 'users', 'k', '--bogus']],
    [['rebuild', '--node', 'x']],
    [['rebuild', '--node', '-1']],
    [['rebuild', '--serve', 'ftp://x']],
    [['bulk', 'users', '--chunk-lines', '0']],
    [['tail', '--limit', '1.5']],
  ])('%j is a usage error: exit 2, nothing sent', async (args) => {
    const result = await run(args);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/error|tailbase:/);
    expect(result.stderr).not.toContain('cannot reach');
  });

  it.each([
    [['put', 'books', '', '{}']],
    [['put', 'books', '.', '{}']],
    [['put', 'books', '..', '{}']],
    [['get', 'books', '..']],
    [['del', 'books', '']],
  ])('%j: a key no URL can address is a usage error naming the key', async (args) => {
    const result = await run(args);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/key/);
    expect(result.stderr).not.toContain('cannot reach');
  });

  it.each([
    [['put', '', 'k', '{}']],
    [['get', '..', 'k']],
    [['del', 'Users', 'k']],
    [['scan', '_settings']],
    [['search', 'a/b', 'q']],
    [['bulk', '.']],
    [['tail', '--collection', '']],
  ])('%j: a collection name no node takes is a usage error naming it', async (args) => {
    const result = await run(args);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/collection name must match/);
    expect(result.stderr).not.toContain('cannot reach');
  });

  it('rejects a bad --url before sending', async () => {
    const result = await runCli(['get', 'users', 'k', '--url', 'not a url'], { home });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('expected a URL');
  });

  it('put: a document that is not JSON, or none at all on a terminal, is a usage error', async () => {
    expect((await run(['put', 'users', 'k', '{oops'])).code).toBe(2);
    const none = await run(['put', 'users', 'k']);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('as an argument or on stdin');
    expect((await run(['put', 'users', 'k'], 'not json')).code).toBe(2);
  });

  it('bulk of a file that does not exist is a usage error', async () => {
    const result = await run(['bulk', 'users', path.join(home, 'missing.ndjson')]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('is not a file');
  });

  it('a well-formed command reaches for the server: exit 1 with a message naming the URL', async () => {
    const result = await run(['put', 'users', 'k', '{"a":1}']);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`tailbase: cannot reach ${closed}: ECONNREFUSED (unreachable)\n`);
    const json = await run(['get', 'users', 'k', '--json']);
    expect(JSON.parse(json.stderr)).toMatchObject({ error: { code: 'unreachable', status: 503 } });
  });

  it('--help prints the usage and exits 0', async () => {
    const result = await run(['scan', '--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Usage: tailbase scan [options] <collection>');
    expect(result.stdout).toContain('--all');
  });
});
