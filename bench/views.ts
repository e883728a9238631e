/**
 * `npm run bench -- views` (issue 29): `tailbase start` with 0, 1 and 3 views over the source,
 * each loaded with the same source documents: the source's PUT rate under wrk beside the one
 * without views; write → visible, one client, a PUT then a read with its token of the source
 * document and of the grouped view's document it changed; a view's rebuild rate (a view
 * declared over the loaded source, until it has processed it all) beside the serve-node's replay
 * of the same log. Then PostgreSQL doing the same
 * job when it is installed: an upsert whose trigger maintains a summary table, and the
 * `SELECT ... GROUP BY` a reader would run instead. 10^5 source documents
 * (TAILBASE_BENCH_VIEWS_DOCS=1000000 for 10^6); a quick run loads 2,000.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from './api-workloads.js';
import { rebuildServeNode, startEmbedded } from './embedded.js';
import { skipRow } from './gateway.js';
import { LatencyHistogram } from './latency-histogram.js';
import { runLoad } from './load.js';
import { runPostgres } from './peer-postgres.js';
import { detectPeers } from './peers.js';
import { tailbaseBuilt } from './processes.js';
import { makeBenchDir } from './references.js';
import type { BenchOptions, WorkloadResult } from './types.js';
import type { WrkResult } from './wrk.js';
import { CONNECTIONS } from './workload.js';

const SOURCE_DOCS = Number(process.env.TAILBASE_BENCH_VIEWS_DOCS ?? 100_000);
const SOURCE_DOCS_QUICK = 2_000;
const COUNTRIES = 50;
const BULK_CHUNK = 1_000;
/** Keys the PUT load spreads over, as the gateway group's. */
const PUT_KEYS = 2_000;
const VISIBLE_SAMPLES = 300;
const VISIBLE_SAMPLES_QUICK = 30;
const WAIT_MS = 10_000;
/** A view not caught up by then fails the workload. */
const CATCH_UP_MS_MAX = 600_000;
const POLL_MS = 20;
const SETUP_MS_MAX = 600_000;
/** Targets of issue 29. */
const ONE_VIEW_PUT_RATIO_MIN = 0.8;
const VIEW_VISIBLE_P99_RATIO_MAX = 2;

const VIEWS = [
  {
    name: 'by_country',
    definition: {
      from: 'orders',
      groupBy: ['country'],
      aggregates: { orders: 'count()', revenue: 'sum(total)' },
    },
  },
  {
    name: 'by_status',
    definition: {
      from: 'orders',
      groupBy: ['status'],
      aggregates: { orders: 'count()', top: 'max(total)', mean: 'avg(total)' },
    },
  },
  {
    name: 'hourly',
    definition: {
      from: 'orders',
      groupBy: ['country'],
      aggregates: { orders: 'count()' },
      window: { field: 'ts', size: '1h', grace: '5m' },
    },
  },
];

const order = (i: number) => ({
  country: `c${i % COUNTRIES}`,
  total: (i % 10_000) / 100,
  status: i % 3 === 0 ? 'paid' : 'open',
  ts: 1_700_000_000_000 + i * 1000,
});

export async function loadSource(url: string, docs: number): Promise<void> {
  for (let i = 0; i < docs; i += BULK_CHUNK) {
    const chunk = Array.from({ length: Math.min(BULK_CHUNK, docs - i) }, (_, j) => ({
      key: `o${i + j}`,
      value: order(i + j),
    }));
    await request(`${url}/v1/collections/orders/docs`, {
      method: 'POST',
      body: JSON.stringify(chunk),
    });
  }
}

/** The source collection with its first document, and the first `count` views over it. */
export async function declareViews(url: string, count: number): Promise<string[]> {
  await loadSource(url, 1);
  const views = VIEWS.slice(0, count);
  for (const { name, definition } of views) {
    await request(`${url}/v1/views/${name}`, { method: 'PUT', body: JSON.stringify(definition) });
  }
  return views.map((view) => view.name);
}

/** The source PUT load: wrk over PUT_KEYS keys for `durationS`. */
export function putLoad(url: string, durationS: number): Promise<WrkResult> {
  return runLoad({
    baseUrl: url,
    method: 'PUT',
    contentType: 'application/json',
    targets: Array.from({ length: PUT_KEYS }, (_, i) => ({
      path: `/v1/collections/orders/docs/o${i}`,
      body: new TextEncoder().encode(JSON.stringify(order(i + 1))),
    })),
    connections: CONNECTIONS,
    threads: 2,
    durationS,
  });
}

/** Waits until the view has processed every record of its source; answers the ms it took. */
export async function caughtUp(url: string, view: string, sinceMs: number): Promise<number> {
  for (;;) {
    const { body: status } = await request(`${url}/v1/status`);
    const ends = new Map<number, number>(
      (status.partitions as { topic: string; partition: number; endOffset: number }[])
        .filter((p) => p.topic === 'orders')
        .map((p) => [p.partition, p.endOffset]),
    );
    const { body } = await request(`${url}/v1/views/${view}`);
    const frontiers = body.frontiers as { partition: number; frontier: number }[] | null;
    if (frontiers?.every((f) => f.frontier === (ends.get(f.partition) ?? 0))) {
      return Date.now() - sinceMs;
    }
    if (Date.now() - sinceMs > CATCH_UP_MS_MAX) throw new Error(`view ${view} did not catch up`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** One client: PUT, then read with its token until the answer holds it; p50/p99 of each path. */
export async function writeToVisible(url: string, samples: number) {
  const source = new LatencyHistogram();
  const view = new LatencyHistogram();
  for (let i = 0; i < samples; i++) {
    for (const [histogram, path] of [
      [source, `/v1/collections/orders/docs/v${i}`],
      [view, `/v1/collections/by_country/docs/${encodeURIComponent(JSON.stringify(['c0']))}`],
    ] as const) {
      const startedMs = performance.now();
      const { token } = await request(`${url}/v1/collections/orders/docs/v${i}`, {
        method: 'PUT',
        body: JSON.stringify({ ...order(0), total: i }),
      });
      await request(`${url}${path}?wait_ms=${WAIT_MS}`, { headers: { 'tailbase-token': token } });
      histogram.recordMs(performance.now() - startedMs);
    }
  }
  return { source: source.summary(), view: view.summary() };
}

export async function runViewsBench(options: BenchOptions): Promise<WorkloadResult[]> {
  if (!tailbaseBuilt()) return [skipRow('views', 'skipped: not built yet (dist/bin/tailbase.js)')];
  const quick = options.quick;
  const docs = quick ? SOURCE_DOCS_QUICK : SOURCE_DOCS;
  const durationS = quick ? 1 : 5;
  const results: WorkloadResult[] = [];
  for (const viewCount of [0, 1, 3]) {
    const dir = makeBenchDir('views');
    try {
      const tailbase = await startEmbedded(dir);
      try {
        await declareViews(tailbase.url, viewCount);
        const loadStartedMs = Date.now();
        await loadSource(tailbase.url, docs);
        const loadMs = Date.now() - loadStartedMs;
        tailbase.resetPeakRss();
        const put = await putLoad(tailbase.url, durationS);
        results.push({
          group: 'views',
          name: `PUT, ${viewCount} view${viewCount === 1 ? '' : 's'}`,
          description: `PUT of a source document over ${PUT_KEYS} keys, ${CONNECTIONS} connections, ${docs} source documents, ${viewCount} views (grouped, grouped, windowed), tailbase start`,
          throughput: { value: put.requestsPerSec, unit: 'writes/s' },
          latency: put.latency,
          figures: {
            errorCount: put.errors,
            documents: docs,
            bulkLoadDocsPerSec: Math.round((docs / loadMs) * 1000),
          },
          ratios: [],
          peakRssBytes: { 'tailbase start': tailbase.peakRssBytes() },
        });
        if (viewCount === 1) {
          await caughtUp(tailbase.url, 'by_country', Date.now());
          const visible = await writeToVisible(
            tailbase.url,
            quick ? VISIBLE_SAMPLES_QUICK : VISIBLE_SAMPLES,
          );
          const ratio = visible.view.p99Ms / visible.source.p99Ms;
          results.push(
            {
              group: 'views',
              name: 'write → visible in source',
              description: 'one client: PUT, then GET of the document with its token',
              latency: visible.source,
              figures: {},
              ratios: [],
              peakRssBytes: {},
            },
            {
              group: 'views',
              name: 'write → visible in view',
              description:
                'one client: PUT, then GET of its group in a grouped view with its token',
              latency: visible.view,
              figures: { p99VsSource: Number(ratio.toFixed(2)) },
              ratios: [{ reference: 'write → visible in source', value: ratio }],
              peakRssBytes: {},
              targets: [
                {
                  name: 'view p99 / source p99',
                  goal: `<= ${VIEW_VISIBLE_P99_RATIO_MAX}`,
                  met: ratio <= VIEW_VISIBLE_P99_RATIO_MAX,
                },
              ],
            },
          );
          const rebuildStartedMs = Date.now();
          await request(`${tailbase.url}/v1/views/rebuilt`, {
            method: 'PUT',
            body: JSON.stringify({ ...VIEWS[0].definition }),
          });
          const rebuildMs = await caughtUp(tailbase.url, 'rebuilt', rebuildStartedMs);
          const { body: status } = await request(`${tailbase.url}/v1/status`);
          const records = (status.partitions as { topic: string; endOffset: number }[])
            .filter((p) => p.topic === 'orders')
            .reduce((sum, p) => sum + p.endOffset, 0);
          const replayMs = await rebuildServeNode(tailbase.url, 'orders');
          const rebuildRate = Math.round((records / rebuildMs) * 1000);
          const replayRate = Math.round((records / replayMs) * 1000);
          results.push({
            group: 'views',
            name: 'serve-node replay',
            description: `serve-node 0 rebuilt from the log (${records} source records, and the views' topics), until a strong read of the source sees the log end`,
            throughput: { value: replayRate, unit: 'records/s' },
            figures: { records, replayMs },
            ratios: [],
            peakRssBytes: {},
          });
          results.push({
            group: 'views',
            name: 'view rebuild',
            description: `a grouped view declared over ${records} source records, until it has processed them all`,
            throughput: { value: rebuildRate, unit: 'records/s' },
            figures: { records, rebuildMs },
            ratios: [{ reference: 'serve-node replay', value: rebuildRate / replayRate }],
            peakRssBytes: {},
          });
        }
      } finally {
        await tailbase.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const base = results.find((r) => r.name === 'PUT, 0 views')!.throughput!.value;
  for (const row of results.filter((r) => r.name.startsWith('PUT, ') && r !== results[0])) {
    const value = base > 0 ? row.throughput!.value / base : 0;
    row.ratios.push({ reference: 'PUT, 0 views', value });
    if (row.name === 'PUT, 1 view') {
      row.targets = [
        {
          name: '1 view / 0 views',
          goal: `>= ${ONE_VIEW_PUT_RATIO_MIN}`,
          met: value >= ONE_VIEW_PUT_RATIO_MIN,
        },
      ];
    }
  }
  const postgres = detectPeers().find((p) => p.name === 'postgres')?.binary ?? null;
  const peers =
    postgres === null
      ? [skipRow('views', 'postgres: skipped: not installed (apt-get install -y postgresql)')]
      : await runPostgresViews(postgres, docs, quick);
  return [...results, ...peers];
}

const ORDERS_SCHEMA = `
CREATE TABLE orders (k text PRIMARY KEY, country text NOT NULL, total numeric NOT NULL,
  status text NOT NULL, ts bigint NOT NULL);
CREATE TABLE by_country (country text PRIMARY KEY, orders bigint NOT NULL, revenue numeric NOT NULL);
CREATE FUNCTION by_country_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' THEN
    UPDATE by_country SET orders = orders - 1, revenue = revenue - OLD.total
      WHERE country = OLD.country;
  END IF;
  INSERT INTO by_country VALUES (NEW.country, 1, NEW.total)
    ON CONFLICT (country) DO UPDATE
    SET orders = by_country.orders + 1, revenue = by_country.revenue + excluded.revenue;
  RETURN NEW;
END $$;
CREATE TRIGGER orders_by_country AFTER INSERT OR UPDATE ON orders
  FOR EACH ROW EXECUTE FUNCTION by_country_apply();
`;

function runPostgresViews(
  postgres: string,
  docs: number,
  quick: boolean,
): Promise<WorkloadResult[]> {
  return runPostgres(postgres, {
    group: 'views',
    quick,
    setupMsMax: SETUP_MS_MAX,
    prepare: async (dir) => {
      const csv = join(dir, 'orders.csv');
      writeFileSync(
        csv,
        Array.from({ length: docs }, (_, i) => {
          const o = order(i);
          return [`o${i}`, o.country, o.total, o.status, o.ts].join(',');
        }).join('\n'),
      );
      const upsert = `\\set k random(0, ${PUT_KEYS - 1})
INSERT INTO orders VALUES ('o' || :k, 'c' || (:k % ${COUNTRIES}), :k, 'open', 1700000000000)
  ON CONFLICT (k) DO UPDATE SET country = excluded.country, total = excluded.total;
`;
      return {
        setup: [
          ORDERS_SCHEMA,
          `\\copy orders FROM '${csv}' WITH (FORMAT csv)`,
          'INSERT INTO by_country SELECT country, count(*), sum(total) FROM orders GROUP BY country ON CONFLICT (country) DO UPDATE SET orders = excluded.orders, revenue = excluded.revenue',
        ],
        files: [csv],
        runs: [
          {
            name: 'postgres upsert + trigger',
            description: `upsert of an order over ${PUT_KEYS} keys whose trigger maintains by_country, ${docs} rows, ${CONNECTIONS} clients, fsync=on`,
            script: upsert,
            unit: 'writes/s',
          },
          {
            name: 'postgres SELECT GROUP BY',
            description: `SELECT country, count(*), sum(total) FROM orders GROUP BY country over ${docs} rows, at read time`,
            script: 'SELECT country, count(*), sum(total) FROM orders GROUP BY country;\n',
            unit: 'queries/s',
          },
        ],
      };
    },
  });
}
