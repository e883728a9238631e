// Proves the gateway's answers match the shapes /openapi.json declares for them: each public
// route is called on a real `tailbase start` and its body checked against the route's declared
// schema (TypeBox's Value.Check), including the bodies the routes splice together as text, and
// the change feed's lines: a document's change, and the reset line of a view's feed.
import { Value } from '@sinclair/typebox/value';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_ROUTES, type ApiRouteName, TOKEN_HEADER } from '../../gateway/api/index.js';
import { spawnEmbedded, type SpawnedEmbedded } from '../harness/index.js';

/** How long a redefined view may take to be swapped in. */
const SWAP_MS_MAX = 30_000;

let node: SpawnedEmbedded;
let token = '';
beforeAll(async () => {
  node = await spawnEmbedded({ partitions: 2 });
});
afterAll(() => node.stop());

/** Calls `path` and checks the answer against what `name` declares for its status. */
async function conforms(name: ApiRouteName, path: string, init: RequestInit = {}) {
  const response = await fetch(node.url + path, {
    ...init,
    headers: { [TOKEN_HEADER]: token, 'content-type': 'application/json', ...init.headers },
  });
  token = response.headers.get(TOKEN_HEADER) ?? token;
  const declared = (API_ROUTES[name].answers as Record<number, { schema: object } | undefined>)[
    response.status
  ];
  expect(declared, `${name} answered ${response.status}`).toBeDefined();
  const text = await response.text();
  const body = response.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text;
  const errors = [...Value.Errors(declared?.schema as never, body)].map(
    (e) => `${e.path}: ${e.message}`,
  );
  expect(errors, `${name}: ${text.slice(0, 200)}`).toEqual([]);
  return body;
}

describe('answers match their declarations', () => {
  it('for every route', async () => {
    const doc = '/v1/collections/shapes/docs';
    await conforms('putSettings', '/v1/collections/shapes/settings', {
      method: 'PUT',
      body: JSON.stringify({ searchable: ['title'] }),
    });
    await conforms('putDocument', `${doc}/a`, {
      method: 'PUT',
      body: JSON.stringify({ title: 'shape of water', n: 1 }),
    });
    await conforms('bulk', doc, {
      method: 'POST',
      body: JSON.stringify([{ key: 'b', value: { title: 'shape b' } }]),
    });
    await conforms('getDocument', `${doc}/a`);
    await conforms('scan', `${doc}?limit=1`);
    const found = await conforms('search', '/v1/collections/shapes/search?q=shape&highlight=true');
    expect(found.hits.length).toBe(2);
    await conforms('getSettings', '/v1/collections/shapes/settings');
    await conforms('deleteDocument', `${doc}/b`, { method: 'DELETE' });
    await conforms('status', '/v1/status');
    await conforms('serveNodeStatus', '/v1/admin/serve-nodes/0/status');
    await conforms('openapi', '/openapi.json');
    await conforms('health', '/healthz');
    await conforms('ready', '/readyz');
    await conforms('metrics', '/metrics');
    const feed = await fetch(`${node.url}/v1/changes?collection=shapes&limit=3`);
    const lines = (await feed.text()).trim().split('\n');
    expect(lines.length).toBe(3);
    const event = API_ROUTES.changes.answers[200]?.schema as never;
    for (const line of lines) expect([...Value.Errors(event, JSON.parse(line))]).toEqual([]);
    await conforms('rebuild', '/v1/admin/serve-nodes/0/rebuild', { method: 'POST' });
  });

  it("for a view's feed: its reset line and the new version's changes", async () => {
    const doc = '/v1/collections/reset_source/docs';
    await conforms('bulk', doc, {
      method: 'POST',
      body: JSON.stringify([{ key: 'a', value: { kind: 'x', shade: 'red' } }]),
    });
    const view = (kind: string) => ({
      from: 'reset_source',
      groupBy: [kind],
      aggregates: { n: 'count()' },
    });
    await conforms('putView', '/v1/views/resets', {
      method: 'PUT',
      body: JSON.stringify(view('kind')),
    });
    const first = await fetch(`${node.url}/v1/changes?collection=resets&limit=1`);
    const oldToken = (JSON.parse((await first.text()).trim()) as { token: string }).token;
    const before = (await conforms('getView', '/v1/views/resets')).version as number;
    await conforms('putView', '/v1/views/resets', {
      method: 'PUT',
      body: JSON.stringify(view('shade')),
    });
    const deadline = Date.now() + SWAP_MS_MAX;
    for (;;) {
      const info = await conforms('getView', '/v1/views/resets');
      if (info.version !== before && info.rebuilding === null) break;
      expect(Date.now(), 'the swap').toBeLessThan(deadline);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const feed = await fetch(`${node.url}/v1/changes?collection=resets&token=${oldToken}&limit=1`);
    const lines = (await feed.text())
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines.map((line) => line.reset ?? false)).toEqual([true, false]);
    const event = API_ROUTES.changes.answers[200]?.schema as never;
    for (const line of lines) expect([...Value.Errors(event, line)]).toEqual([]);
  });
});
