/**
 * `npm run bench -- gateway` (issue 4): a log-node, serve-nodes and a gateway as real processes
 * (`tailbase ...`), driven by wrk at 64 connections, each rate beside the bare hono handler
 * measured in the same run:
 * - put: single-document PUT (durable: the log fsyncs before the ack), writes/s;
 * - write→visible: from a PUT's ack to a GET carrying its token returning the document, p50/p99;
 * - get, scan, search: requests/s through the gateway (two serve-nodes, four partitions each);
 * - search skew: overlap@10 of the merged ranking over two serve-nodes against one serve-node
 *   holding every partition (per-node term statistics make scores not quite comparable).
 */
import { rmSync } from 'node:fs';
import { InternalHttp, type InternalResponse } from '../shared/internal-http.js';
import { HttpServeClient } from '../shared/http-serve-client.js';
import { loadCorpus } from './corpus.js';
import {
  CONNECTIONS,
  DOCUMENT,
  KEYS,
  keyOf,
  SEARCH_TERMS_MAX,
  searchCorpus,
  searchTerms,
  skewQueries,
} from './workload.js';
import { LatencyHistogram } from './latency-histogram.js';
import { runLoad } from './load.js';
import { CpuWindow } from './cpu-share.js';
import { spawnLogNode, spawnTailbase, tailbaseBuilt, type RunningProcess } from './processes.js';
import { makeBenchDir } from './references.js';
import type { BenchOptions, References, WorkloadResult } from './types.js';

const PARTITIONS = 8;
const VISIBLE_SESSIONS = 8;
/** write→visible stops taking samples past this, and each of its requests is bounded. */
const VISIBLE_TIME_MS_MAX = 60_000;
const REQUEST_MS_MAX = 30_000;
const BULK_CHUNK = 500;
const SKEW_QUERIES = 50;
const TARGET_PUT_PER_SEC = 10_000;
const TARGET_GET_PER_SEC = 15_000;
const TARGET_RATIO = 0.5;
const TARGET_VISIBLE_P99_MS = 25;

async function request(url: string, init: RequestInit = {}) {
  const response = await fetch(url, { signal: AbortSignal.timeout(REQUEST_MS_MAX), ...init });
  const body = (await response.json()) as Record<string, any>;
  if (!response.ok) throw new Error(`${init.method ?? 'GET'} ${url}: ${response.status}`);
  return { body, token: response.headers.get('tailbase-token') ?? '' };
}

/**
 * Each session PUTs then GETs with the token; the GET's duration is the write→visible time. The
 * sessions use node:http with keep-alive (the nodes' own internal client): with `fetch` the same
 * measurement read p50 13.5 ms, p99 54 ms against 8.5 ms and 25 ms, most of it the client's own.
 */
async function writeToVisible(
  url: string,
  samples: number,
  timeMsMax = VISIBLE_TIME_MS_MAX,
): Promise<LatencyHistogram> {
  const deadline = performance.now() + timeMsMax;
  const histogram = new LatencyHistogram();
  const http = new InternalHttp(url, 'gateway');
  const expectOk = (what: string, response: InternalResponse) => {
    if (!response.ok) throw new Error(`${what}: ${response.status} ${response.body}`);
    return response;
  };
  let next = 0;
  const session = async () => {
    while (next < samples && performance.now() < deadline) {
      const path = `/v1/collections/visible/docs/visible-${next++}`;
      const put = expectOk(
        `PUT ${path}`,
        await http.request(path, {
          timeoutMs: REQUEST_MS_MAX,
          method: 'PUT',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ n: next }),
        }),
      );
      const started = performance.now();
      expectOk(
        `GET ${path}`,
        await http.request(path, {
          timeoutMs: REQUEST_MS_MAX,
          headers: { 'tailbase-token': put.header('tailbase-token')! },
        }),
      );
      histogram.recordMs(performance.now() - started);
    }
  };
  try {
    await Promise.all(Array.from({ length: VISIBLE_SESSIONS }, session));
  } finally {
    http.close();
  }
  return histogram;
}

export async function runGatewayBench(
  options: BenchOptions & { references?: References },
): Promise<{ workloads: WorkloadResult[] }> {
  const skip = (skipped: string) => ({
    workloads: [
      {
        group: 'gateway',
        name: 'put',
        description: '',
        figures: {},
        ratios: [],
        peakRssBytes: {},
        skipped,
      },
    ],
  });
  if (!tailbaseBuilt()) return skip('skipped: not built yet (dist/bin/tailbase.js)');
  const loadS = options.quick ? 1 : 5;
  const warmupS = options.quick ? 1 : 2;
  const hono = options.references?.honoReqPerSec?.value ?? 0;
  const dirs = [makeBenchDir('gw-log')];
  const log = await spawnLogNode(dirs[0], PARTITIONS);
  const processes: RunningProcess[] = [];
  try {
    const serve = async (partitions: string) => {
      dirs.push(makeBenchDir('gw-serve'));
      const flags = ['--data', dirs[dirs.length - 1], '--log', log.url, '--partitions', partitions];
      const node = await spawnTailbase('serve-node', flags, { readyPath: '/healthz' });
      processes.push(node);
      return node;
    };
    const half = PARTITIONS / 2;
    const low = await serve(`0-${half - 1}`);
    const high = await serve(`${half}-${PARTITIONS - 1}`);
    const gateway = await spawnTailbase('gateway', [
      '--log',
      log.url,
      '--serve',
      `${low.url},${high.url}`,
    ]);
    processes.push(gateway);
    const url = gateway.url;
    const value = Buffer.from(DOCUMENT);
    const keys = Array.from({ length: KEYS }, (_, i) => keyOf(i));

    // Every key exists before the load, so GETs measure hits whatever the PUT rate reached.
    for (let i = 0; i < KEYS; i += BULK_CHUNK) {
      const chunk = keys
        .slice(i, i + BULK_CHUNK)
        .map((key) => ({ key, value: JSON.parse(`${value}`) }));
      await request(`${url}/v1/collections/bench/docs`, {
        method: 'POST',
        body: JSON.stringify(chunk),
      });
    }
    const putLoad = {
      baseUrl: url,
      method: 'PUT' as const,
      contentType: 'application/json',
      targets: keys.map((key) => ({ path: `/v1/collections/bench/docs/${key}`, body: value })),
      connections: CONNECTIONS,
      threads: 2,
    };
    // Unmeasured, as the log group warms up: the PUT path compiled, the pools and sockets open.
    await runLoad({ ...putLoad, durationS: warmupS });
    const putCpu = new CpuWindow({
      gateway: [gateway],
      'log-node': [log],
      'serve-nodes': [low, high],
    });
    const put = await runLoad({ ...putLoad, durationS: loadS });
    const putMachineBusyPercent = putCpu.machineBusyPercent();
    // A strong read waits until the serve-nodes hold every PUT above, so write→visible measures
    // new writes rather than the drain of the PUT load's backlog, and GETs find every version.
    const drained = () =>
      request(`${url}/v1/collections/bench/docs?limit=1&consistency=strong&wait_ms=30000`);
    await drained();
    // The serve-nodes' share counts the backlog they applied after the load ended.
    const putCpuMicros = putCpu.microsPerRequest(put.requests);
    const visible = await writeToVisible(url, options.quick ? 100 : 1000);
    // The same sessions while half as many connections keep PUTting: what a reader sees in use.
    const [visibleLoaded] = await Promise.all([
      writeToVisible(url, Number.MAX_SAFE_INTEGER, loadS * 1000),
      runLoad({ ...putLoad, connections: CONNECTIONS / 2, durationS: loadS }),
    ]);
    await drained();
    const get = await runLoad({
      baseUrl: url,
      method: 'GET',
      targets: keys.map((key) => ({ path: `/v1/collections/bench/docs/${key}` })),
      connections: CONNECTIONS,
      threads: 2,
      durationS: loadS,
    });
    const scan = await runLoad({
      baseUrl: url,
      method: 'GET',
      targets: keys
        .filter((_, i) => i % 10 === 0)
        .map((key) => ({ path: `/v1/collections/bench/docs?limit=20&start=${key}` })),
      connections: CONNECTIONS,
      threads: 2,
      durationS: loadS,
    });

    const corpus = searchCorpus((await loadCorpus()).docs, options.quick);
    let token = '';
    for (let i = 0; i < corpus.length; i += BULK_CHUNK) {
      const chunk = corpus.slice(i, i + BULK_CHUNK).map((d) => ({ key: d.key, value: d.value }));
      ({ token } = await request(`${url}/v1/collections/corpus/docs`, {
        method: 'POST',
        body: JSON.stringify(chunk),
        headers: token ? { 'tailbase-token': token } : {},
      }));
    }
    const queries = searchTerms(corpus, SEARCH_TERMS_MAX);
    // Wait once for every serve-node to hold the whole corpus, then measure.
    await request(`${url}/v1/collections/corpus/search?q=${encodeURIComponent(queries[0])}`, {
      headers: { 'tailbase-token': token },
    });
    // Started only now, so the loads above ran against the two-node topology alone; it replays the
    // log and the wait below lets it catch up.
    const single = await serve(`0-${PARTITIONS - 1}`);
    const wholeIndex = new HttpServeClient(single.url);
    // The whole-index node waits for every record the log holds now, the corpus included.
    const status = await request(`${url}/v1/status`);
    const ends = status.body.partitions as { partition: number; endOffset: number }[];
    const waitFor = Object.fromEntries(
      ends.filter((p) => p.endOffset > 0).map((p) => [p.partition, p.endOffset - 1]),
    );
    const skew = skewQueries(corpus, SKEW_QUERIES);
    const overlap = { at10: 0, at3: 0 };
    for (const q of skew) {
      const merged = await request(
        `${url}/v1/collections/corpus/search?q=${encodeURIComponent(q)}&limit=10`,
      );
      const whole = await wholeIndex.search('corpus', { q, limit: 10, waitFor, waitMs: 30_000 });
      const expected = whole.hits.map((h) => h.key);
      const got = (merged.body.hits as { key: string }[]).map((h) => h.key);
      if (expected.length < 10) throw new Error(`skew query "${q}" has ${expected.length} hits`);
      for (const [k, name] of [
        [10, 'at10'],
        [3, 'at3'],
      ] as const) {
        const top = new Set(expected.slice(0, k));
        overlap[name] += got.slice(0, k).filter((key) => top.has(key)).length / k / skew.length;
      }
    }
    const search = await runLoad({
      baseUrl: url,
      method: 'GET',
      targets: queries.map((q) => ({
        path: `/v1/collections/corpus/search?q=${encodeURIComponent(q)}&limit=10`,
      })),
      connections: CONNECTIONS,
      threads: 2,
      durationS: loadS,
    });

    const rss = {
      gateway: gateway.peakRssBytes(),
      'log-node': log.peakRssBytes(),
      'serve-nodes': Math.max(low.peakRssBytes(), high.peakRssBytes()),
    };
    const vsHono = (v: number) => [
      { reference: 'bare hono handler', value: hono > 0 ? v / hono : 0 },
    ];
    const ratioMet = (v: number) => hono > 0 && v / hono >= TARGET_RATIO;
    const load = (name: string, description: string, result: typeof put, unit: string) => ({
      group: 'gateway',
      name,
      description,
      throughput: { value: result.requestsPerSec, unit },
      latency: result.latency,
      figures: { errorCount: result.errors, honoReqPerSec: hono },
      ratios: vsHono(result.requestsPerSec),
      peakRssBytes: rss,
    });
    return {
      workloads: [
        {
          ...load(
            'put',
            `single-document PUT, ${CONNECTIONS} connections, ${KEYS} keys, fsync=always`,
            put,
            'writes/s',
          ),
          cpu: { machineBusyPercent: putMachineBusyPercent, microsPerRequest: putCpuMicros },
          targets: [
            {
              name: 'PUT/s',
              goal: `>= ${TARGET_PUT_PER_SEC}`,
              met: put.requestsPerSec >= TARGET_PUT_PER_SEC,
            },
            {
              name: 'PUT / bare hono',
              goal: `>= ${TARGET_RATIO}`,
              met: ratioMet(put.requestsPerSec),
            },
          ],
        },
        {
          group: 'gateway',
          name: 'write-visible',
          description: `PUT ack → GET with its token returning the document, ${VISIBLE_SESSIONS} sessions, no other load (after the PUT backlog has been applied)`,
          latency: visible.summary(),
          figures: {},
          ratios: [],
          peakRssBytes: rss,
          targets: [
            {
              name: 'write→visible p99',
              goal: `<= ${TARGET_VISIBLE_P99_MS} ms`,
              met: visible.quantileMs(0.99) <= TARGET_VISIBLE_P99_MS,
            },
          ],
        },
        {
          group: 'gateway',
          name: 'write-visible loaded',
          description: `as write-visible, while ${CONNECTIONS / 2} connections PUT as fast as they can`,
          latency: visibleLoaded.summary(),
          figures: {},
          ratios: [],
          peakRssBytes: rss,
        },
        {
          ...load('get', `GET by key, ${CONNECTIONS} connections, eventual`, get, 'req/s'),
          targets: [
            {
              name: 'GET/s',
              goal: `>= ${TARGET_GET_PER_SEC}`,
              met: get.requestsPerSec >= TARGET_GET_PER_SEC,
            },
            {
              name: 'GET / bare hono',
              goal: `>= ${TARGET_RATIO}`,
              met: ratioMet(get.requestsPerSec),
            },
          ],
        },
        load('scan', 'range scan of 20 keys across 8 partitions on 2 serve-nodes', scan, 'req/s'),
        {
          ...load(
            'search',
            `top-10 search over ${corpus.length} real documents on 2 serve-nodes`,
            search,
            'queries/s',
          ),
        },
        {
          group: 'gateway',
          name: 'search skew',
          description:
            `top-k overlap of the merged ranking over 2 serve-nodes with one serve-node holding ` +
            `every partition (one FTS5 index), ${skew.length} queries of terms in >= 20 documents`,
          figures: { queries: skew.length, overlapAt10: overlap.at10, overlapAt3: overlap.at3 },
          ratios: [
            { reference: 'one index, overlap@10', value: overlap.at10 },
            { reference: 'one index, overlap@3', value: overlap.at3 },
          ],
          peakRssBytes: rss,
        },
      ],
    };
  } finally {
    await Promise.all(processes.map((p) => p.stop()));
    await log.stop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
}
