// Proves invariant 6 at the gateway: each bad request in the table gets a 4xx JSON error with a
// code (never a stack trace) and the log's end offsets stay exactly as they were. The gateway
// reaches the log-node by its Kafka listener.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeGatewayServices } from '../../gateway/services.js';
import { decodeRecords, iterateBatches } from '../../shared/batch-codec.js';
import { collectionOffsets, offsetsOf, TokenCodec } from '../../shared/token.js';
import { gatewayApp, startLog, type LogFixture } from './gateway-harness.js';

let fixture: LogFixture;
let app: Awaited<ReturnType<typeof gatewayApp>>['app'];
let services: Awaited<ReturnType<typeof gatewayApp>>['services'];
let goodToken: string;

const limits = { documentBytesMax: 2048, bulkRecordsMax: 5, bulkBytesMax: 8192 };

beforeAll(async () => {
  fixture = await startLog(4);
  ({ app, services } = await gatewayApp(fixture.client, [], { logUrls: [fixture.url], limits }));
  const put = await app.request('/v1/collections/items/docs/seed', {
    method: 'PUT',
    body: '{"title":"seed"}',
  });
  expect(put.status).toBe(200);
  goodToken = ((await put.json()) as { token: string }).token;
});

afterAll(async () => {
  await closeGatewayServices(services);
  await fixture.stop();
});

const foreign = new TokenCodec('01JDQ4ZP9V8X2Y3Z4A5B6C7D8F', 4).encode(
  collectionOffsets('items', new Map([[0, 1]])),
);
const json = (body: string | Uint8Array, headers: Record<string, string> = {}) => ({
  method: 'PUT',
  body,
  headers: { 'content-type': 'application/json', ...headers },
});
const post = (body: string | Uint8Array, type = 'application/x-ndjson') => ({
  method: 'POST',
  body,
  headers: { 'content-type': type },
});

const nested = (depth: number) => `{"a":${'['.repeat(depth - 1)}1${']'.repeat(depth - 1)}}`;

const table: [string, string, RequestInit, number, string][] = [
  ['malformed JSON', '/v1/collections/items/docs/a', json('{"a":'), 400, 'invalid_json'],
  ['not an object', '/v1/collections/items/docs/a', json('[1,2]'), 400, 'invalid_document'],
  ['empty body', '/v1/collections/items/docs/a', json(''), 400, 'invalid_json'],
  [
    'oversize document',
    '/v1/collections/items/docs/a',
    json(JSON.stringify({ t: 'x'.repeat(3000) })),
    413,
    'document_too_large',
  ],
  [
    'invalid UTF-8 body',
    '/v1/collections/items/docs/a',
    json(new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d])),
    400,
    'invalid_utf8',
  ],
  [
    'lone surrogate in body',
    '/v1/collections/items/docs/a',
    json('{"a":"\\ud800"}'),
    400,
    'invalid_utf8',
  ],
  [
    'lone surrogate in a nested member name',
    '/v1/collections/items/docs/a',
    json('{"a":{"\\udc00":1}}'),
    400,
    'invalid_utf8',
  ],
  [
    'number past the double range',
    '/v1/collections/items/docs/a',
    json('{"a":{"b":[-1e400]}}'),
    400,
    'invalid_number',
  ],
  [
    'bulk: number past the double range',
    '/v1/collections/items/docs',
    post('{"key":"a","value":{"n":1e309}}'),
    400,
    'invalid_number',
  ],
  ['bad collection', '/v1/collections/Items/docs/a', json('{}'), 400, 'invalid_collection'],
  [
    'reserved collection',
    '/v1/collections/__tailbase_settings/docs/a',
    json('{}'),
    400,
    'invalid_collection',
  ],
  [
    'long collection',
    `/v1/collections/${'a'.repeat(65)}/docs/a`,
    json('{}'),
    400,
    'invalid_collection',
  ],
  [
    'key too long',
    `/v1/collections/items/docs/${'k'.repeat(1025)}`,
    json('{}'),
    400,
    'invalid_key',
  ],
  ['invalid UTF-8 key', '/v1/collections/items/docs/%FF', json('{}'), 400, 'invalid_utf8'],
  ['surrogate key', '/v1/collections/items/docs/%ED%A0%80', json('{}'), 400, 'invalid_utf8'],
  [
    'malformed token',
    '/v1/collections/items/docs/a',
    json('{}', { 'tailbase-token': '!!' }),
    400,
    'invalid_token',
  ],
  [
    'foreign token',
    '/v1/collections/items/docs/a',
    json('{}', { 'tailbase-token': foreign }),
    400,
    'invalid_token',
  ],
  [
    'token query param',
    `/v1/collections/items/docs/a?token=AAAA`,
    json('{}'),
    400,
    'invalid_token',
  ],
  [
    'bulk: bad line',
    '/v1/collections/items/docs',
    post('{"key":"a","value":{}}\n{nope'),
    400,
    'invalid_json',
  ],
  ['bulk: missing value', '/v1/collections/items/docs', post('{"key":"a"}'), 400, 'invalid_record'],
  [
    'bulk: bad key',
    '/v1/collections/items/docs',
    post('{"key":"","value":{}}'),
    400,
    'invalid_key',
  ],
  [
    'bulk: too many',
    '/v1/collections/items/docs',
    post('{"key":"a","value":{}}\n'.repeat(6)),
    413,
    'too_many_records',
  ],
  [
    'bulk: too large',
    '/v1/collections/items/docs',
    post(`[${'{"key":"a","value":{}},'.repeat(400)}1]`, 'application/json'),
    413,
    'bulk_too_large',
  ],
  [
    'bulk: malformed JSON array',
    '/v1/collections/items/docs',
    post('[{"key":"a"', 'application/json'),
    400,
    'invalid_json',
  ],
  [
    'bulk: application/json not an array',
    '/v1/collections/items/docs',
    post('{"key":"a","value":{}}', 'application/json'),
    400,
    'invalid_bulk',
  ],
  ['bulk: empty', '/v1/collections/items/docs', post('\n\n'), 400, 'empty_bulk'],
  [
    'document nested too deep',
    '/v1/collections/items/docs/a',
    json(nested(65)),
    400,
    'document_too_deep',
  ],
  [
    'bulk: value nested too deep',
    '/v1/collections/items/docs',
    post(`{"key":"a","value":${nested(65)}}`),
    400,
    'document_too_deep',
  ],
  [
    'bulk: value a string',
    '/v1/collections/items/docs',
    post('[{"key":"a","value":"x"}]', 'application/json'),
    400,
    'invalid_document',
  ],
  [
    'settings: bad tokenizer',
    '/v1/collections/items/settings',
    json('{"tokenizer":"x"}'),
    400,
    'invalid_settings',
  ],
  [
    'settings: unknown field',
    '/v1/collections/items/settings',
    json('{"colour":1}'),
    400,
    'invalid_settings',
  ],
  [
    'scan: limit not a number',
    '/v1/collections/items/docs?limit=ten',
    { method: 'GET' },
    400,
    'invalid_parameter',
  ],
  [
    'scan: limit too big',
    '/v1/collections/items/docs?limit=100000',
    { method: 'GET' },
    400,
    'invalid_parameter',
  ],
  [
    'scan: bad cursor',
    '/v1/collections/items/docs?cursor=zzz',
    { method: 'GET' },
    400,
    'invalid_cursor',
  ],
  [
    'get: bad consistency',
    '/v1/collections/items/docs/a?consistency=maybe',
    { method: 'GET' },
    400,
    'invalid_parameter',
  ],
  [
    'get: negative wait',
    '/v1/collections/items/docs/a?wait_ms=-1',
    { method: 'GET' },
    400,
    'invalid_parameter',
  ],
  ['search: no q', '/v1/collections/items/search', { method: 'GET' }, 400, 'invalid_query'],
  [
    'search: offset too deep',
    '/v1/collections/items/search?q=a&offset=99999',
    { method: 'GET' },
    400,
    'invalid_parameter',
  ],
  [
    'search: invalid UTF-8 q',
    '/v1/collections/items/search?q=%FF',
    { method: 'GET' },
    400,
    'invalid_utf8',
  ],
  ['changes: bad from', '/v1/changes?from=later', { method: 'GET' }, 400, 'invalid_parameter'],
  [
    'changes: bad collection',
    '/v1/changes?collection=A',
    { method: 'GET' },
    400,
    'invalid_collection',
  ],
  ['unknown route', '/v1/nothing', { method: 'GET' }, 404, 'not_found'],
  [
    'unknown method',
    '/v1/collections/items/docs/a',
    { method: 'PATCH', body: '{}' },
    405,
    'method_not_allowed',
  ],
  ['unknown method on status', '/v1/status', { method: 'POST' }, 405, 'method_not_allowed'],
  [
    'unknown method on an admin route',
    '/v1/admin/serve-nodes/0/rebuild',
    { method: 'DELETE' },
    405,
    'method_not_allowed',
  ],
];

describe('gateway bad requests', () => {
  it.each(table)('%s: %s %o → %i %s', async (_name, path, init, status, code) => {
    const before = await fixture.client.offsets();
    const response = await app.request(path, init);
    expect(response.status).toBe(status);
    expect(response.headers.get('content-type')).toContain('application/json');
    const body = (await response.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe(code);
    expect(body.error.message).toBeTypeOf('string');
    expect(JSON.stringify(body)).not.toMatch(/at .*\.(ts|js):\d+|127\.0\.0\.1|\/tmp\//);
    expect(await fixture.client.offsets()).toEqual(before);
  });

  it('accepts a good token on a write and answers with a merged one', async () => {
    const response = await app.request(
      '/v1/collections/items/docs/b',
      json('{"x":1}', { 'tailbase-token': goodToken }),
    );
    expect(response.status).toBe(200);
    const body = (await response.json()) as { token: string; partition: number; offset: number };
    const merged = offsetsOf(services.tokens.decode(body.token), 'items');
    for (const [p, o] of offsetsOf(services.tokens.decode(goodToken), 'items')) {
      expect(merged.get(p)).toBeGreaterThanOrEqual(o);
    }
    expect(merged.get(body.partition)).toBe(body.offset);
    expect(response.headers.get('tailbase-token')).toBe(body.token);
  });

  it('takes a document nested exactly documentDepthMax levels', async () => {
    const response = await app.request('/v1/collections/items/docs/deep', json(nested(64)));
    expect(response.status).toBe(200);
  });

  it('stores a body sent with a UTF-8 byte order mark as the JSON text after it', async () => {
    const bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"a":1}')]);
    const response = await app.request('/v1/collections/items/docs/bom', json(bom));
    expect(response.status).toBe(200);
    const { partition, offset } = (await response.json()) as { partition: number; offset: number };
    const read = await fixture.client.read('items', partition, offset);
    const [record] = [...iterateBatches(read.batches)]
      .flatMap((batch) => decodeRecords(batch.bytes))
      .filter((r) => r.offset === offset);
    expect(Buffer.from(record.value!).toString('utf8')).toBe('{"a":1}');
  });
});

describe('gateway with its log unreachable', () => {
  it('answers 503 without naming the internal address', async () => {
    const { createGatewayApp, createGatewayServices, resolveGatewayConfig } =
      await import('../../gateway/index.js');
    // A Kafka log whose only broker has gone: the client's connections are refused.
    const dead = await startLog(2);
    await dead.node.stop();
    const config = resolveGatewayConfig({
      logUrls: [dead.url],
      serveUrls: [],
      writer: { appendAttemptsMax: 1 },
    });
    const deadServices = createGatewayServices(
      config,
      services.cluster,
      dead.client,
      [],
      services.logger,
    );
    const deadApp = createGatewayApp(deadServices);
    for (const [path, init] of [
      ['/v1/collections/items/docs/a?consistency=strong', { method: 'GET' }],
      ['/v1/collections/items/docs/a', { method: 'PUT', body: '{}' }],
    ] as const) {
      const response = await deadApp.request(path, init);
      expect(response.status).toBe(503);
      const text = await response.text();
      expect(text).not.toContain('127.0.0.1');
      expect(JSON.parse(text).error.code).toMatch(/unreachable|log_unavailable|outcome_unknown/);
    }
    await closeGatewayServices(deadServices);
    dead.client.close();
  });
});
