// The view contract over `tailbase start`: declaring a view (a record in the log, listed and
// inspected, its topic a collection marked as a view), bad definitions refused with a code that
// names the problem and nothing written, writes to a view refused with 409 and changing nothing,
// a drop that frees the name, and a source that cannot be dropped while views derive from it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnEmbedded, tempDir } from '../harness/index.js';
import { runCli } from '../unit/client-runner.js';
import { call } from './gateway-harness.js';

describe('views: the definition contract (tailbase start)', () => {
  let url: string;
  let stop: () => Promise<unknown>;

  beforeAll(async () => {
    const embedded = await spawnEmbedded({ partitions: 4 });
    url = embedded.url;
    stop = embedded.stop;
    expect(
      (await call(url, 'PUT', '/v1/collections/orders/docs/o1', { country: 'FR' })).status,
    ).toBe(200);
    // A collection with settings and no documents yet: its empty topic is not a view's to take.
    expect(
      (await call(url, 'PUT', '/v1/collections/settled/settings', { searchable: ['title'] }))
        .status,
    ).toBe(200);
  });

  afterAll(async () => {
    await stop?.();
  });

  const byCountry = {
    from: 'orders',
    filter: 'status = paid',
    groupBy: ['country'],
    aggregates: { orders: 'count()', revenue: 'sum(total)' },
  };

  it('declares a view, lists it, inspects it, marks its collection; the same PUT again is a no-op', async () => {
    const put = await call(url, 'PUT', '/v1/views/by_country', byCountry);
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({
      view: 'by_country',
      definition: byCountry,
      version: expect.any(Number),
      source: 'orders',
    });
    const again = await call(url, 'PUT', '/v1/views/by_country', byCountry);
    expect(again.status).toBe(200);
    expect(again.body.version).toBe(put.body.version);
    // Another definition is a redefinition: built beside the one that serves, then swapped in;
    // and back again.
    for (const definition of [{ ...byCountry, groupBy: ['city'] }, byCountry]) {
      const redefined = await call(url, 'PUT', '/v1/views/by_country', definition);
      expect(redefined.status).toBe(200);
      expect(redefined.body.rebuilding).toMatchObject({ definition });
      for (let polls = 0; polls < 400; polls++) {
        if ((await call(url, 'GET', '/v1/views/by_country')).body.rebuilding === null) break;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      const swapped = await call(url, 'GET', '/v1/views/by_country');
      expect(swapped.body).toMatchObject({
        definition,
        version: redefined.body.rebuilding.version,
        topic: redefined.body.rebuilding.topic,
        rebuilding: null,
      });
    }
    const list = await call(url, 'GET', '/v1/views');
    expect(list.body.views.map((v: { view: string }) => v.view)).toContain('by_country');
    const one = await call(url, 'GET', '/v1/views/by_country');
    expect(one.body).toMatchObject({ view: 'by_country', definition: byCountry });
    const collections = await call(url, 'GET', '/v1/collections');
    const marks = Object.fromEntries(
      collections.body.collections.map((c: { collection: string; view: boolean }) => [
        c.collection,
        c.view,
      ]),
    );
    expect(marks).toMatchObject({ orders: false, by_country: true });
  });

  it('refuses bad definitions with a code naming the problem, and writes nothing', async () => {
    const before = (await call(url, 'GET', '/v1/views')).body.views.length;
    const bad: [string, unknown, number, string][] = [
      [
        'v1',
        { from: 'orders', groupBy: ['c'], aggregates: { n: 'median(x)' } },
        400,
        'unknown_aggregate',
      ],
      [
        'v2',
        { from: 'orders', groupBy: ['c'], aggregates: { n: 'count(x)' } },
        400,
        'invalid_aggregate',
      ],
      [
        'v3',
        { from: 'orders', groupBy: ['c'], aggregates: { n: 'sum()' } },
        400,
        'invalid_aggregate',
      ],
      ['v4', { from: 'orders', groupBy: ['c'] }, 400, 'invalid_view'],
      ['v5', { from: 'orders', select: ['a'], groupBy: ['c'] }, 400, 'invalid_view'],
      ['v6', { from: 'orders', select: ['a'], having: 1 }, 400, 'invalid_view'],
      ['v7', { from: 'orders', filter: 'a = = 1', select: ['a'] }, 400, 'invalid_filter'],
      ['v8', { from: 'v8', select: ['a'] }, 400, 'view_cycle'],
      ['orders', { from: 'by_country', select: ['country'] }, 400, 'view_name_taken'],
      ['settled', { from: 'orders', select: ['country'] }, 400, 'view_name_taken'],
      ['v9', { from: 'nothing_here', select: ['a'] }, 404, 'source_not_found'],
      [
        'v10',
        { from: 'orders', groupBy: ['c'], aggregates: { c: 'count()' } },
        400,
        'invalid_view',
      ],
      ...(
        [
          { size: '1h' },
          { field: 'ts', size: 'an hour' },
          { field: 'ts', size: '0m' },
          { field: 'ts', size: '1h', advance: '2h' },
          { field: 'ts', size: '1h', advance: '25m' },
          { field: 'ts', size: '1h', grace: 5 },
          { field: 'ts', size: '1h', every: '1m' },
          { field: 'ts', size: '1h', advance: '1s' },
        ] as unknown[]
      ).map((window, i): [string, unknown, number, string] => [
        `w${i}`,
        { from: 'orders', groupBy: ['c'], aggregates: { n: 'count()' }, window },
        400,
        'invalid_window',
      ]),
      [
        'w_select',
        { from: 'orders', select: ['c'], window: { field: 'ts', size: '1h' } },
        400,
        'invalid_window',
      ],
      [
        'w_named',
        {
          from: 'orders',
          groupBy: ['c'],
          aggregates: { windowEnd: 'max(ts)' },
          window: { field: 'ts', size: '1h' },
        },
        400,
        'invalid_window',
      ],
    ];
    for (const [name, body, status, code] of bad) {
      const answer = await call(url, 'PUT', `/v1/views/${name}`, body);
      expect({ name, status: answer.status, code: answer.body.error?.code }).toEqual({
        name,
        status,
        code,
      });
    }
    expect((await call(url, 'GET', '/v1/views')).body.views.length).toBe(before);
  });

  it('refuses writes to a view with 409 view_read_only, and they change nothing', async () => {
    // Redefined, the view is served from its version's topic: written only by its processor too.
    const { topic } = (await call(url, 'GET', '/v1/views/by_country')).body;
    expect(topic).not.toBe('by_country');
    const ends = async () => {
      const status = await call(url, 'GET', '/v1/status');
      return (status.body.partitions as { topic: string; endOffset: number }[])
        .filter((p) => p.topic === topic)
        .map((p) => p.endOffset);
    };
    const before = await ends();
    expect(before.length).toBeGreaterThan(0);
    const writes = [
      await call(url, 'PUT', `/v1/collections/${topic}/docs/x`, { a: 1 }),
      await call(url, 'PUT', '/v1/collections/by_country/docs/x', { a: 1 }),
      await call(url, 'DELETE', '/v1/collections/by_country/docs/x'),
      await call(url, 'POST', '/v1/collections/by_country/docs', [{ key: 'x', value: { a: 1 } }]),
      await call(url, 'DELETE', '/v1/collections/by_country'),
    ];
    expect(writes.map((w) => [w.status, w.body.error?.code])).toEqual(
      writes.map(() => [409, 'view_read_only']),
    );
    expect(await ends()).toEqual(before);
  });

  it('drops a view: gone from the list and the collections, the name free again', async () => {
    const dependent = await call(url, 'PUT', '/v1/views/top', {
      from: 'by_country',
      select: ['orders'],
    });
    expect(dependent.status).toBe(200);
    const blocked = await call(url, 'DELETE', '/v1/views/by_country');
    expect(blocked.status).toBe(409);
    expect(blocked.body.error.code).toBe('view_has_dependents');
    const source = await call(url, 'DELETE', '/v1/collections/orders');
    expect([source.status, source.body.error.code]).toEqual([409, 'collection_has_views']);
    const kept = await call(url, 'GET', '/v1/collections/orders/docs/o1?consistency=strong');
    expect([kept.status, kept.body]).toEqual([200, expect.objectContaining({ key: 'o1' })]);
    expect((await call(url, 'DELETE', '/v1/views/top')).status).toBe(200);
    const drop = await call(url, 'DELETE', '/v1/views/by_country');
    expect(drop.status).toBe(200);
    expect(drop.body).toEqual({ view: 'by_country', dropped: true });
    expect((await call(url, 'GET', '/v1/views/by_country')).body.error.code).toBe('view_not_found');
    const names = (await call(url, 'GET', '/v1/collections')).body.collections.map(
      (c: { collection: string }) => c.collection,
    );
    expect(names).not.toContain('by_country');
    const write = await call(url, 'PUT', '/v1/collections/by_country/docs/x', { a: 1 });
    expect(write.status).toBe(200);
  });

  it('tailbase view create|ls|show|rm through the CLI, and get reads a group', async () => {
    const home = tempDir('views-cli');
    const cli = (...args: string[]) => runCli([...args, '--url', url], { home: home.path });
    try {
      const definition = '{"from":"orders","groupBy":["country"],"aggregates":{"n":"count()"}}';
      const create = await cli('view', 'create', 'per_country', definition);
      expect([create.code, create.stdout]).toEqual([
        0,
        expect.stringMatching(/^view per_country version \d+\n$/),
      ]);
      const ls = await cli('view', 'ls');
      expect(ls.stdout).toMatch(/^VIEW\s+FROM\s+SOURCE\s+VERSION\s+LAG\s+REBUILD\n/);
      expect(ls.stdout).toMatch(/\nper_country\s+orders\s+orders\s+\d+\s+\d+\s+-\n/);
      const show = await cli('view', 'show', 'per_country', '--json');
      expect(JSON.parse(show.stdout)).toMatchObject({ view: 'per_country', source: 'orders' });
      const get = await cli('get', 'per_country', '["FR"]', '--consistency', 'strong');
      expect([get.code, JSON.parse(get.stdout)]).toEqual([0, { country: 'FR', n: 1 }]);
      const redefined = await cli(
        'view',
        'create',
        'per_country',
        '{"from":"orders","groupBy":["country"],"aggregates":{"n":"count()","m":"count()"}}',
      );
      expect([redefined.code, redefined.stdout]).toEqual([
        0,
        expect.stringMatching(/^view per_country version \d+, rebuilding as version \d+\n$/),
      ]);
      const bad = await cli(
        'view',
        'create',
        'bad',
        '{"from":"orders","groupBy":["c"],"aggregates":{"n":"median(x)"}}',
      );
      expect(bad.code).not.toBe(0);
      expect(bad.stderr).toContain('unknown_aggregate');
      expect((await cli('view', 'rm', 'per_country')).code).not.toBe(0);
      expect((await cli('view', 'rm', 'per_country', '--yes')).stdout).toBe(
        'dropped view per_country\n',
      );
    } finally {
      home.cleanup();
    }
  });
});
