// Proves API-key security: no key → 401, a wrong key → 401, a key without the scope → 403 on
// every guarded route (and the log untouched),
// admin includes every scope, health stays open; and that without keys the gateway refuses to
// bind anything but loopback.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseApiKeys } from '../../gateway/config.js';
import { startGateway } from '../../gateway/index.js';
import { closeGatewayServices } from '../../gateway/services.js';
import { gatewayApp, silent, startLog, type LogFixture } from './gateway-harness.js';

let fixture: LogFixture;
let gateway: Awaited<ReturnType<typeof gatewayApp>>;
const READER = 'reader-key-0123456789';
const WRITER = 'writer-key-0123456789';
const ADMIN = 'admin-key-01234567890';
const WRITE_ONLY = 'write-only-key-012345';

beforeAll(async () => {
  fixture = await startLog(2);
  gateway = await gatewayApp(fixture.client, [], {
    logUrls: [fixture.url],
    apiKeys: parseApiKeys(`${READER}:read;${WRITER}:write,read;${ADMIN}:admin;${WRITE_ONLY}:write`),
  });
});

afterAll(async () => {
  await closeGatewayServices(gateway.services);
  await fixture.stop();
});

const put = (key?: string, path = '/v1/collections/a/docs/k') =>
  gateway.app.request(path, {
    method: 'PUT',
    body: '{"x":1}',
    headers: key ? { authorization: `Bearer ${key}` } : {},
  });

describe('gateway auth', () => {
  it('asks for a key, refuses a wrong one and a missing scope', async () => {
    const none = await put();
    expect(none.status).toBe(401);
    expect(((await none.json()) as any).error.code).toBe('unauthorized');
    expect((await put('not-a-key-at-all-000')).status).toBe(401);
    const reader = await put(READER);
    expect(reader.status).toBe(403);
    expect(((await reader.json()) as any).error).toMatchObject({
      code: 'forbidden',
      scope: 'write',
    });
    expect((await put(WRITER)).status).toBe(200);
    expect((await put(ADMIN)).status).toBe(200);
    const settings = await put(WRITER, '/v1/collections/a/settings');
    expect(settings.status).toBe(403);
    const viaHeader = await gateway.app.request('/v1/collections/a/docs/k', {
      method: 'DELETE',
      headers: { 'x-api-key': WRITER },
    });
    expect(viaHeader.status).toBe(200);
  });

  // Every guarded route, the scope it needs, and a key that lacks it.
  const routes: [method: string, path: string, lacking: string][] = [
    ['GET', '/v1/collections/a/docs/k', WRITE_ONLY],
    ['GET', '/v1/collections/a/docs', WRITE_ONLY],
    ['GET', '/v1/collections/a/search?q=x', WRITE_ONLY],
    ['GET', '/v1/changes', WRITE_ONLY],
    ['GET', '/v1/status', WRITE_ONLY],
    ['GET', '/metrics', WRITE_ONLY],
    ['PUT', '/v1/collections/a/docs/k', READER],
    ['DELETE', '/v1/collections/a/docs/k', READER],
    ['POST', '/v1/collections/a/docs', READER],
    ['PUT', '/v1/collections/a/settings', WRITER],
    ['PATCH', '/v1/collections/a/settings', WRITER],
    ['GET', '/v1/collections', WRITE_ONLY],
    ['DELETE', '/v1/collections/a', WRITER],
    ['GET', '/v1/admin/serve-nodes/0/status', WRITER],
    ['POST', '/v1/admin/serve-nodes/0/rebuild', WRITER],
  ];
  it.each(routes)(
    '%s %s: 401 without a key, 403 with one lacking its scope',
    async (method, path, lacking) => {
      const before = await fixture.client.offsets();
      const body = method === 'GET' || method === 'DELETE' ? undefined : '[{"key":"k","value":{}}]';
      const refused = [
        await gateway.app.request(path, { method, body }),
        await gateway.app.request(path, {
          method,
          body,
          headers: { authorization: `Bearer ${lacking}` },
        }),
      ];
      expect(refused.map((r) => r.status)).toEqual([401, 403]);
      expect(await fixture.client.offsets()).toEqual(before);
    },
  );

  it('leaves health open', async () => {
    expect((await gateway.app.request('/healthz')).status).toBe(200);
  });

  it('refuses to bind beyond loopback without keys', async () => {
    await expect(
      startGateway({ host: '0.0.0.0', logUrls: [fixture.url], serveUrls: [] }, { logger: silent }),
    ).rejects.toThrow(/API keys/);
  });

  it('parses TAILBASE_API_KEYS and rejects unknown scopes and short keys', () => {
    expect(parseApiKeys(`${READER}:read; ${ADMIN}`)).toEqual([
      { key: READER, scopes: ['read'] },
      { key: ADMIN, scopes: ['read', 'write', 'admin'] },
    ]);
    expect(() => parseApiKeys(`${READER}:root`)).toThrow(/scope/);
    expect(() => parseApiKeys('short:read')).toThrow(/16/);
  });
});
