// Proves the typed client's failure handling against a real gateway (`tailbase start`) behind an
// HTTP proxy that answers 429 or 503 on command: 429 and 503 are retried with backoff within
// RetryPolicy's attemptsMax (and no longer than its backoffs allow), a bulk is retried only when
// the gateway refused it before the log (`overloaded`), never after `write_outcome_unknown`, and
// every failure is a TailbaseError with the server's status, code and details. Also: bulk
// progress, and the scan and search iterators over pages.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Tailbase, TailbaseError } from '../../client/sdk/index.js';
import { spawnEmbedded, type SpawnedEmbedded } from '../harness/index.js';

interface Fault {
  status: number;
  code: string;
  headers?: Record<string, string>;
}

let node: SpawnedEmbedded;
let proxy: Server;
let proxyUrl: string;
/** The faults to answer, one a request, before forwarding again. */
let faults: Fault[] = [];
let requests = 0;

async function bodyOf(req: IncomingMessage): Promise<Buffer> {
  const pieces: Buffer[] = [];
  for await (const piece of req) pieces.push(piece as Buffer);
  return Buffer.concat(pieces);
}

beforeAll(async () => {
  node = await spawnEmbedded({ partitions: 2 });
  proxy = createServer(async (req, res) => {
    requests += 1;
    const body = await bodyOf(req);
    const fault = faults.shift();
    if (fault !== undefined) {
      const error = { error: { code: fault.code, message: `injected ${fault.code}` } };
      res.writeHead(fault.status, { 'content-type': 'application/json', ...fault.headers });
      res.end(JSON.stringify(error));
      return;
    }
    const headers: Record<string, string> = {};
    for (const name of ['content-type', 'tailbase-token', 'authorization']) {
      const value = req.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    const upstream = await fetch(node.url + req.url, {
      method: req.method,
      headers,
      body: body.length > 0 ? body : undefined,
    });
    const answer: Record<string, string> = {};
    upstream.headers.forEach((value, name) => {
      if (name === 'content-type' || name === 'tailbase-token') answer[name] = value;
    });
    res.writeHead(upstream.status, answer).end(Buffer.from(await upstream.arrayBuffer()));
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
});

afterAll(async () => {
  proxy.closeAllConnections();
  await new Promise((resolve) => proxy.close(resolve));
  await node.stop();
});

const retry = { attemptsMax: 4, backoffMsFirst: 20, backoffMsMax: 80 };
/** The longest a call's backoffs may take: each pause is at most min(max, first * 2^n). */
const BACKOFFS_MS_MAX = 20 + 40 + 80;

function failing(faultList: Fault[]) {
  faults = [...faultList];
  requests = 0;
}

async function rejection(call: Promise<unknown>): Promise<TailbaseError> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(TailbaseError);
  return error as TailbaseError;
}

describe('typed client retries', () => {
  it('retries 503 and 429 on reads and key writes until one succeeds', async () => {
    const retries: string[] = [];
    const db = new Tailbase({ url: proxyUrl, retry, onRetry: (_n, e) => retries.push(e.code) });
    const books = db.collection<{ t: string }>('retry');
    failing([
      { status: 503, code: 'write_outcome_unknown' },
      { status: 429, code: 'rate_limited', headers: { 'retry-after': '0' } },
    ]);
    await books.put('a', { t: 'one' });
    expect(requests).toBe(3);
    failing([
      { status: 503, code: 'partition_unavailable' },
      { status: 503, code: 'too_many_waiters' },
    ]);
    expect((await books.get('a')).value).toEqual({ t: 'one' });
    expect(requests).toBe(3);
    expect(retries).toEqual([
      'write_outcome_unknown',
      'rate_limited',
      'partition_unavailable',
      'too_many_waiters',
    ]);
  });

  it('gives up after attemptsMax attempts, within the backoff bound', async () => {
    const db = new Tailbase({ url: proxyUrl, retry });
    failing(Array.from({ length: 10 }, () => ({ status: 503, code: 'partition_unavailable' })));
    const started = performance.now();
    const error = await rejection(db.collection('retry').get('a'));
    const elapsedMs = performance.now() - started;
    expect(requests).toBe(retry.attemptsMax);
    expect(error).toMatchObject({ status: 503, code: 'partition_unavailable' });
    // The pauses, plus a generous allowance for four proxied round trips on a loaded machine.
    expect(elapsedMs).toBeLessThan(BACKOFFS_MS_MAX + 5000);
  });

  it('retries a bulk only when the gateway refused it before the log', async () => {
    const db = new Tailbase({ url: proxyUrl, retry });
    const items = [
      { key: 'b1', value: { n: 1 } },
      { key: 'b2', value: { n: 2 } },
    ];
    failing([{ status: 503, code: 'overloaded' }]);
    expect(await db.collection('retry').bulk(items)).toMatchObject({ records: 2, requests: 1 });
    expect(requests).toBe(2);
    for (const code of ['write_outcome_unknown', 'log_unavailable', 'append_queue_full']) {
      failing([{ status: 503, code }]);
      const error = await rejection(db.collection('retry').bulk(items));
      expect(error).toMatchObject({ status: 503, code });
      expect(requests).toBe(1);
    }
    failing([{ status: 429, code: 'rate_limited' }]);
    await db.collection('retry').bulk(items);
    expect(requests).toBe(2);
  });

  it('reports bulk progress after each request', async () => {
    const db = new Tailbase({ url: node.url });
    const seen: number[] = [];
    const items = Array.from({ length: 25 }, (_, i) => ({ key: `p${i}`, value: { i } }));
    const result = await db.collection('progress').bulk(items, {
      chunkRecords: 10,
      onProgress: (progress) => seen.push(progress.records),
    });
    expect(seen).toEqual([10, 20, 25]);
    expect(result).toMatchObject({ records: 25, requests: 3 });
    expect((await db.collection('progress').get('p24')).value).toEqual({ i: 24 });
  });
});

describe('typed client pages', () => {
  it('scan and search iterate every page of 25 documents, 10 a page', async () => {
    const db = new Tailbase({ url: node.url });
    const pages = db.collection<{ text: string; i: number }>('pages');
    const items = Array.from({ length: 25 }, (_, i) => ({
      key: `k${String(i).padStart(2, '0')}`,
      value: { text: `pagination ${i}`, i },
    }));
    await pages.bulk(items);
    const scanned: string[][] = [];
    for await (const page of pages.scan({ limit: 10 })) scanned.push(page.items.map((d) => d.key));
    expect(scanned.map((keys) => keys.length)).toEqual([10, 10, 5]);
    expect(scanned.flat()).toEqual(items.map((item) => item.key));
    const found: string[] = [];
    let searchPages = 0;
    for await (const page of pages.search('pagination', { limit: 10 })) {
      searchPages += 1;
      found.push(...page.hits.map((hit) => hit.key));
    }
    expect(searchPages).toBe(3);
    expect(found.sort()).toEqual(items.map((item) => item.key));
    const bounded: number[] = [];
    for await (const page of pages.scan({ limit: 10, pagesMax: 2 }))
      bounded.push(page.items.length);
    expect(bounded).toEqual([10, 10]);
  });
});

describe('typed client errors', () => {
  it("are TailbaseErrors with the server's status, code and details", async () => {
    const db = new Tailbase({ url: node.url, retry: { attemptsMax: 1 } });
    const missing = await rejection(db.collection('errors').get('nope'));
    expect(missing).toMatchObject({ status: 404, code: 'document_not_found' });
    expect(missing.details).toMatchObject({ collection: 'errors', key: 'nope' });
    const query = await rejection(db.collection('errors').searchPage(' '));
    expect(query).toMatchObject({ status: 400, code: 'invalid_query' });
    const name = await rejection(db.collection('Not A Name').put('k', {}));
    expect(name).toMatchObject({ status: 400, code: 'invalid_collection' });
    const notObject = await rejection(db.collection('errors').putJson('k', '[1]'));
    expect(notObject).toMatchObject({ status: 400, code: 'invalid_document' });
    const scan = await rejection(db.collection('errors').scanPage({ limit: 0 }));
    expect(scan).toMatchObject({ status: 400, code: 'invalid_parameter' });
  });

  it('is unreachable, and retried, when the connection is refused', async () => {
    const retries: string[] = [];
    const db = new Tailbase({
      url: 'http://127.0.0.1:9',
      retry: { attemptsMax: 3, backoffMsFirst: 1, backoffMsMax: 5 },
      onRetry: (_n, e) => retries.push(e.code),
    });
    const error = await rejection(db.status());
    expect(error).toMatchObject({ status: 503, code: 'unreachable' });
    expect(retries).toEqual(['unreachable', 'unreachable']);
  });
});
