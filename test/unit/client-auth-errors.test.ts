// Proves the client reports a 401 or 403 from the gateway as the caller's own auth failure: the
// real status and code, the gateway's message (which key or scope is missing), exit 1, and
// `tail` gives up at once instead of retrying a refusal that will not change.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './client-runner.js';

const home = fs.mkdtempSync(path.join(os.tmpdir(), 'tailbase-client-auth-'));
let server: http.Server;
let url: string;
let requests = 0;

beforeAll(async () => {
  // A gateway stand-in: no key is a 401, any key lacks the write scope (403).
  server = http.createServer((request, response) => {
    requests += 1;
    const keyed = request.headers.authorization !== undefined;
    const [status, error] = keyed
      ? [403, { code: 'forbidden', message: 'this API key lacks the write scope', scope: 'write' }]
      : [401, { code: 'unauthorized', message: 'an API key is required' }];
    response.writeHead(status, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ error }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  fs.rmSync(home, { recursive: true, force: true });
});

describe('client auth errors', () => {
  it('a 401 prints the gateway message with code unauthorized and exits 1', async () => {
    const run = await runCli(['get', 'books', 'k', '--url', url], { home });
    expect(run.code).toBe(1);
    expect(run.stderr).toBe('tailbase: an API key is required (unauthorized)\n');
  });

  it('a 403 keeps status 403 and code forbidden in --json', async () => {
    const run = await runCli(
      ['put', 'books', 'k', '{}', '--url', url, '--api-key', 'r', '--json'],
      {
        home,
      },
    );
    expect(run.code).toBe(1);
    const body = JSON.parse(run.stderr) as { error: Record<string, unknown> };
    expect(body.error).toMatchObject({
      code: 'forbidden',
      status: 403,
      message: 'this API key lacks the write scope',
    });
  });

  it('tail does not retry a 401: one request, no reconnecting, exit 1', async () => {
    requests = 0;
    const run = await runCli(['tail', '--from', 'start', '--url', url], { home });
    expect(run.code).toBe(1);
    expect(run.stderr).not.toContain('reconnecting');
    expect(run.stderr).toContain('(unauthorized)');
    expect(requests).toBe(1);
  }, 10_000);
});
