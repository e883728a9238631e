// Proves GET /openapi.json is a valid OpenAPI 3.1 document (checked by a maintained validator)
// that describes exactly the routes the gateway's hono app serves: none missing, none extra,
// each with the scope its handler is guarded by; and that it describes both lines of the change
// feed, a document's change and a view's reset.
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_ROUTES, honoPath } from '../../gateway/api/index.js';
import { gatewayApp, startLog, type LogFixture } from './gateway-harness.js';

let log: LogFixture;
let app: Awaited<ReturnType<typeof gatewayApp>>['app'];
let document: {
  paths: Record<string, Record<string, { 'x-tailbase-scope'?: string; responses: object }>>;
};

beforeAll(async () => {
  log = await startLog(2);
  ({ app } = await gatewayApp(log.client, [], {
    logUrls: [log.url],
    apiKeys: [{ key: 'reader-key-0123456789', scopes: ['read'] }],
  }));
  const answer = await app.request('/openapi.json');
  expect(answer.status).toBe(200);
  expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
  document = (await answer.json()) as typeof document;
});

afterAll(() => log.stop());

describe('GET /openapi.json', () => {
  it('is valid OpenAPI 3.1', async () => {
    const validator = new Validator();
    const result = await validator.validate(document);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('describes every route the app serves, and nothing else', () => {
    // The app's own routes: its method handlers, without the middleware (`*`) and the 405s
    // registered for every known path under ALL. A guarded route is listed once per handler.
    const served = new Set(
      app.routes.filter((r) => r.method !== 'ALL').map((r) => `${r.method} ${r.path}`),
    );
    const described = Object.entries(document.paths).flatMap(([path, methods]) =>
      Object.keys(methods).map((method) => `${method.toUpperCase()} ${honoPath(path)}`),
    );
    expect(described.length).toBe(new Set(described).size);
    expect([...described].sort()).toEqual([...served].sort());
  });

  it("names each route's API-key scope as the gateway enforces it", async () => {
    for (const [name, route] of Object.entries(API_ROUTES)) {
      const described = document.paths[route.path][route.method];
      expect(described['x-tailbase-scope'], name).toBe(route.scope);
      if (route.method !== 'get' || route.path.includes('{')) continue;
      // A read key opens what needs `read` or nothing, and is refused what needs more.
      const answer = await app.request(route.path, {
        headers: { authorization: 'Bearer reader-key-0123456789' },
      });
      if (route.scope === 'admin') expect(answer.status, name).toBe(403);
      else expect(answer.status, name).not.toBe(403);
      const anonymous = await app.request(route.path);
      expect(anonymous.status === 401, name).toBe(route.scope !== undefined);
      await answer.body?.cancel();
      await anonymous.body?.cancel();
    }
  });

  it('lists the error codes of issue 16 where they apply', () => {
    const codesOf = (path: string, status: string) =>
      (
        document.paths[path].get.responses as Record<
          string,
          { content: { 'application/json': { schema: any } } }
        >
      )[status].content['application/json'].schema.properties.error.properties.code.enum;
    const search = codesOf('/v1/collections/{collection}/search', '400');
    for (const code of ['invalid_filter', 'invalid_sort', 'invalid_facets']) {
      expect(search).toContain(code);
    }
    expect(codesOf('/v1/collections/{collection}/docs', '400')).toContain('field_not_sortable');
    expect(codesOf('/v1/changes', '400')).toContain('field_not_filterable');
  });

  it("describes the change feed's two lines: a change, and a view's reset", () => {
    const responses = document.paths['/v1/changes'].get.responses as Record<
      string,
      { content: Record<string, { schema: { anyOf?: { required: string[]; properties: any }[] } }> }
    >;
    for (const type of ['application/x-ndjson', 'text/event-stream']) {
      const lines = responses['200'].content[type].schema.anyOf ?? [];
      expect(lines.map((line) => [...line.required].sort())).toEqual([
        ['collection', 'key', 'offset', 'partition', 'token', 'value'],
        ['collection', 'reset', 'token', 'version'],
      ]);
      expect(lines[1].properties.reset.const).toBe(true);
    }
  });
});
