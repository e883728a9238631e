/**
 * The public API's workloads, measured the same way against any running tailbase (the cluster of
 * the gateway group, `tailbase start` of the embedded group): wrk at 64 connections for PUT
 * (durable), GET, scan and search; write→visible from 8 sessions carrying their tokens, alone and
 * under PUT load; and where the CPU of the PUT load went.
 */
import { InternalHttp, type InternalResponse } from '../shared/internal-http.js';
import { loadCorpus } from './corpus.js';
import { LatencyHistogram } from './latency-histogram.js';
import { runLoad } from './load.js';
import type { CpuShare, WorkloadResult } from './types.js';
import {
  CONNECTIONS,
  DOCUMENT,
  KEYS,
  keyOf,
  SEARCH_TERMS_MAX,
  searchCorpus,
  searchTerms,
} from './workload.js';
import type { CorpusDoc } from './corpus.js';

const VISIBLE_SESSIONS = 8;
/** write→visible stops taking samples past this, and each of its requests is bounded. */
const VISIBLE_TIME_MS_MAX = 60_000;
const REQUEST_MS_MAX = 30_000;
const BULK_CHUNK = 500;

type LoadResult = Awaited<ReturnType<typeof runLoad>>;

export interface ApiRun {
  put: LoadResult;
  putCpu: CpuShare;
  visible: LatencyHistogram;
  visibleLoaded: LatencyHistogram;
  get: LoadResult;
  /** CPU per GET and per scan: the edge's cost per read, steadier than the rate on a shared machine. */
  getCpu: CpuShare;
  scan: LoadResult;
  scanCpu: CpuShare;
  search: LoadResult;
  corpus: CorpusDoc[];
  /** The token of the corpus's last write: every record of the corpus is at or below it. */
  corpusToken: string;
}

export async function request(url: string, init: RequestInit = {}) {
  const response = await fetch(url, { signal: AbortSignal.timeout(REQUEST_MS_MAX), ...init });
  const body = (await response.json()) as Record<string, any>;
  if (!response.ok) throw new Error(`${init.method ?? 'GET'} ${url}: ${response.status}`);
  return { body, token: response.headers.get('tailbase-token') ?? '' };
}

const SETTLED_POLL_MS = 100;
/** The corpus's merges and the free pages they leave given back, past which the search fails. */
const SETTLED_WAIT_MS_MAX = 60_000;

interface BackgroundWork {
  reindexing: unknown[];
  segmentMerges: unknown[];
  topkMerges: boolean;
  freePages: number;
}

const idle = (node: BackgroundWork) =>
  node.reindexing.length === 0 &&
  node.segmentMerges.length === 0 &&
  !node.topkMerges &&
  node.freePages === 0;

/**
 * Waits until no serve-node of the gateway at `url` has background work left: no re-index, no
 * segment or top-k merge due (merges start once writes pause) and no free pages to give back,
 * as an operator would after a bulk load, so reads are measured against the index they will keep
 * meeting, not against steps whose commits clear every read thread's caches.
 */
export async function settled(url: string, waitMsMax: number): Promise<void> {
  const startedMs = Date.now();
  for (;;) {
    const { body } = await request(`${url}/v1/status`);
    if ((body.serveNodes as BackgroundWork[]).every(idle)) return;
    if (Date.now() - startedMs > waitMsMax) {
      throw new Error(`background work still under way after ${waitMsMax} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, SETTLED_POLL_MS));
  }
}

/** Where the CPU of a load went, from the moment it was opened. */
export interface CpuMeter {
  machineBusyPercent(): number;
  microsPerRequest(requests: number): CpuShare['microsPerRequest'];
}

/**
 * Runs every workload against the gateway at `url`. `openCpuMeter` opens a window over the
 * processes (or threads) whose CPU per PUT is reported.
 */
export async function measureApi(
  url: string,
  openCpuMeter: () => CpuMeter,
  quick: boolean,
): Promise<ApiRun> {
  const loadS = quick ? 1 : 5;
  const warmupS = quick ? 1 : 2;
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
  const putWindow = openCpuMeter();
  const put = await runLoad({ ...putLoad, durationS: loadS });
  const machineBusyPercent = putWindow.machineBusyPercent();
  // A strong read waits until the serve-nodes hold every PUT above, so write→visible measures
  // new writes rather than the drain of the PUT load's backlog, and GETs find every version.
  const drained = () =>
    request(`${url}/v1/collections/bench/docs?limit=1&consistency=strong&wait_ms=30000`);
  await drained();
  // The serve-nodes' share counts the backlog they applied after the load ended.
  const putCpu = { machineBusyPercent, microsPerRequest: putWindow.microsPerRequest(put.requests) };
  const visible = await writeToVisible(url, quick ? 100 : 1000);
  // The same sessions while half as many connections keep PUTting: what a reader sees in use.
  const [visibleLoaded] = await Promise.all([
    writeToVisible(url, Number.MAX_SAFE_INTEGER, loadS * 1000),
    runLoad({ ...putLoad, connections: CONNECTIONS / 2, durationS: loadS }),
  ]);
  await drained();
  const reads = (paths: string[]) =>
    runLoad({
      baseUrl: url,
      method: 'GET',
      targets: paths.map((path) => ({ path })),
      connections: CONNECTIONS,
      threads: 2,
      durationS: loadS,
    });
  const metered = async (paths: string[]) => {
    const window = openCpuMeter();
    const result = await reads(paths);
    const cpu = {
      machineBusyPercent: window.machineBusyPercent(),
      microsPerRequest: window.microsPerRequest(result.requests),
    };
    return [result, cpu] as const;
  };
  const [get, getCpu] = await metered(keys.map((key) => `/v1/collections/bench/docs/${key}`));
  const [scan, scanCpu] = await metered(
    keys
      .filter((_, i) => i % 10 === 0)
      .map((key) => `/v1/collections/bench/docs?limit=20&start=${key}`),
  );

  const corpus = searchCorpus((await loadCorpus()).docs, quick);
  let corpusToken = '';
  for (let i = 0; i < corpus.length; i += BULK_CHUNK) {
    const chunk = corpus.slice(i, i + BULK_CHUNK).map((d) => ({ key: d.key, value: d.value }));
    ({ token: corpusToken } = await request(`${url}/v1/collections/corpus/docs`, {
      method: 'POST',
      body: JSON.stringify(chunk),
      headers: corpusToken ? { 'tailbase-token': corpusToken } : {},
    }));
  }
  const queries = searchTerms(corpus, SEARCH_TERMS_MAX);
  // Wait once for every serve-node to hold the whole corpus, then measure.
  // Bounded as `drained` is: 17 MB of documents into FTS5 outlasts the 5 s default on a busy machine.
  const first = encodeURIComponent(queries[0]);
  await request(`${url}/v1/collections/corpus/search?q=${first}&wait_ms=30000`, {
    headers: { 'tailbase-token': corpusToken },
  });
  await settled(url, SETTLED_WAIT_MS_MAX);
  // With highlights, as a search page shows its hits (PostgreSQL's row does ts_headline too).
  const search = await reads(
    queries.map(
      (q) => `/v1/collections/corpus/search?q=${encodeURIComponent(q)}&limit=10&highlight=true`,
    ),
  );
  return {
    ...{ put, putCpu, visible, visibleLoaded, get, getCpu, scan, scanCpu, search },
    ...{ corpus, corpusToken },
  };
}

/** A goal each API workload is held to, on the ratio to the bare hono handler of the same run. */
export interface ApiTargets {
  putVsHono: number;
  getVsHono: number;
  scanVsHono: number;
  visibleP99Ms: number;
}

/** The rows of an ApiRun, each rate beside the bare hono handler of the same run. */
export function apiWorkloads(
  group: string,
  run: ApiRun,
  hono: number,
  rss: Record<string, number>,
  targets: ApiTargets,
  where: string,
): WorkloadResult[] {
  const vsHono = (v: number) => [
    { reference: 'bare hono handler', value: hono > 0 ? v / hono : 0 },
  ];
  const honoTarget = (name: string, rate: number, goal: number) => ({
    name: `${name} / bare hono`,
    goal: `>= ${goal}`,
    met: hono > 0 && rate / hono >= goal,
  });
  const load = (name: string, description: string, result: LoadResult, unit: string) => ({
    group,
    name,
    description,
    throughput: { value: result.requestsPerSec, unit },
    latency: result.latency,
    figures: { errorCount: result.errors, honoReqPerSec: hono },
    ratios: vsHono(result.requestsPerSec),
    peakRssBytes: rss,
  });
  return [
    {
      ...load(
        'put',
        `single-document PUT, ${CONNECTIONS} connections, ${KEYS} keys, fsync=always, ${where}`,
        run.put,
        'writes/s',
      ),
      cpu: run.putCpu,
      targets: [honoTarget('PUT', run.put.requestsPerSec, targets.putVsHono)],
    },
    {
      group,
      name: 'write-visible',
      description: `PUT ack → GET with its token returning the document, ${VISIBLE_SESSIONS} sessions, no other load (after the PUT backlog has been applied)`,
      latency: run.visible.summary(),
      figures: {},
      ratios: [],
      peakRssBytes: rss,
      targets: [
        {
          name: 'write→visible p99',
          goal: `<= ${targets.visibleP99Ms} ms`,
          met: run.visible.quantileMs(0.99) <= targets.visibleP99Ms,
        },
      ],
    },
    {
      group,
      name: 'write-visible loaded',
      description: `as write-visible, while ${CONNECTIONS / 2} connections PUT as fast as they can`,
      latency: run.visibleLoaded.summary(),
      figures: {},
      ratios: [],
      peakRssBytes: rss,
    },
    {
      ...load(
        'get',
        `GET by key, ${CONNECTIONS} connections, eventual, ${where}`,
        run.get,
        'req/s',
      ),
      cpu: run.getCpu,
      targets: [honoTarget('GET', run.get.requestsPerSec, targets.getVsHono)],
    },
    {
      ...load('scan', `range scan of 20 keys across 8 partitions, ${where}`, run.scan, 'req/s'),
      cpu: run.scanCpu,
      targets: [honoTarget('scan', run.scan.requestsPerSec, targets.scanVsHono)],
    },
    load(
      'search',
      `top-10 search with highlights and the total, over ${run.corpus.length} real documents, ${where}`,
      run.search,
      'queries/s',
    ),
  ];
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
