/**
 * `npm run bench -- cores` (issue 28): `tailbase start` holding a synthetic Zipf corpus
 * (`TAILBASE_BENCH_CORES_DOCS` documents, 100,000 by default; 1,000,000 is the issue's figure),
 * measured on the same data directory in one run under each read configuration: `--read-threads
 * 0` (every read on the serve-node's one thread: before), one and two read threads, key reads on
 * the HTTP thread or on the read threads. The configurations alternate, `TAILBASE_BENCH_CORES_ROUNDS`
 * rounds (2 by default, the second in reverse order), so a machine whose other load drifts weighs
 * on each alike; a row holds the mean of its rounds and each round's p99. For each: one client's
 * GET and search p50/p99 (wrk, one connection), GET and search throughput at 16 connections and
 * the cores the process used meanwhile; beside PostgreSQL's SELECT by key over the same
 * documents, one client and 16.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request, settled } from './api-workloads.js';
import { runLoad } from './load.js';
import { runPostgres, type Prepared } from './peer-postgres.js';
import { detectPeers } from './peers.js';
import { freePort, spawnServer, TAILBASE_BIN, tailbaseBuilt } from './processes.js';
import { makeBenchDir } from './references.js';
import { skipRow } from './gateway.js';
import { seededRandom } from './seeded-random.js';
import type { BenchOptions, LatencySummary, WorkloadResult } from './types.js';
import type { WrkResult } from './wrk.js';

const PARTITIONS = 8;
const DOCS_DEFAULT = 100_000;
const DOCS_QUICK = 5_000;
const CLIENTS = 16;
const VOCABULARY = 20_000;
const TITLE_WORDS = 3;
const BODY_WORDS = 30;
/** Searches ask for words of these Zipf ranks: about 0.3% to 0.06% of the documents each. */
const QUERY_RANKS = { from: 1_000, to: 1_200 };
const BULK_DOCS = 1_000;
const GET_KEYS = 10_000;
const LOAD_WAIT_MS_MAX = 600_000;
const WAIT_MS = 30_000;
const SETTLED_WAIT_MS_MAX = 600_000;
const SEED = 28;
const TARGET_RATIO = 1.6;
const ROUNDS_DEFAULT = 2;

const keyOf = (i: number) => `doc-${String(i).padStart(7, '0')}`;
const wordOf = (rank: number) => `w${rank.toString(36)}z`;

/** Document i's value: title and body of words drawn by Zipf's law (s = 1) over the vocabulary. */
function* corpus(docs: number): Generator<{ key: string; value: { title: string; body: string } }> {
  const next = seededRandom(SEED);
  const cumulative = new Float64Array(VOCABULARY);
  let sum = 0;
  for (let rank = 1; rank <= VOCABULARY; rank++) cumulative[rank - 1] = sum += 1 / rank;
  const word = () => {
    const target = next() * sum;
    let lo = 0;
    let hi = VOCABULARY - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid] < target) lo = mid + 1;
      else hi = mid;
    }
    return wordOf(lo + 1);
  };
  const words = (n: number) => Array.from({ length: n }, word).join(' ');
  for (let i = 0; i < docs; i++) {
    yield { key: keyOf(i), value: { title: words(TITLE_WORDS), body: words(BODY_WORDS) } };
  }
}

function corpusDocs(quick: boolean): number {
  if (quick) return DOCS_QUICK;
  const asked = Number(process.env.TAILBASE_BENCH_CORES_DOCS ?? DOCS_DEFAULT);
  return Number.isSafeInteger(asked) && asked > 0 ? asked : DOCS_DEFAULT;
}

async function startTailbase(dir: string, args: string[]) {
  const port = await freePort();
  return spawnServer({
    args: [
      TAILBASE_BIN,
      'start',
      ...['--data', dir, '--port', String(port), '--kafka-port', 'off'],
      ...['--partitions', String(PARTITIONS), ...args],
    ],
    port,
    readyPath: '/readyz',
  });
}

async function load(url: string, docs: number): Promise<void> {
  let chunk: unknown[] = [];
  let token = '';
  const send = async () => {
    ({ token } = await request(`${url}/v1/collections/zipf/docs`, {
      method: 'POST',
      body: JSON.stringify(chunk),
    }));
    chunk = [];
  };
  for (const doc of corpus(docs)) {
    chunk.push(doc);
    if (chunk.length === BULK_DOCS) await send();
  }
  if (chunk.length > 0) await send();
  // Each wait is at most the node's waitMsMax: a load not applied by then is waited for again.
  const deadline = Date.now() + LOAD_WAIT_MS_MAX;
  for (;;) {
    const read = await fetch(`${url}/v1/collections/zipf/docs?limit=1&wait_ms=${WAIT_MS}`, {
      headers: { 'tailbase-token': token },
    });
    await read.arrayBuffer();
    if (read.ok) break;
    if (read.status !== 504 || Date.now() > deadline) {
      throw new Error(`the load was not applied: ${read.status}`);
    }
  }
  await settled(url, SETTLED_WAIT_MS_MAX);
}

interface Variant {
  name: string;
  args: string[];
  /** The defaults: the targets are checked on this one. */
  targeted?: boolean;
}

/** The first is the baseline the others are compared with. */
const VARIANTS: Variant[] = [
  { name: 'before (--read-threads 0)', args: ['--read-threads', '0'] },
  {
    name: 'one read thread, key reads here',
    args: ['--read-threads', '1', '--key-reads', 'here'],
  },
  {
    name: 'two read threads, key reads here',
    args: ['--read-threads', '2', '--key-reads', 'here'],
  },
  {
    name: 'one read thread, key reads on it',
    args: ['--read-threads', '1', '--key-reads', 'threads'],
  },
  {
    name: 'the defaults: a read thread a core, key reads on them',
    args: [],
    targeted: true,
  },
];

type Run = WrkResult & { cores: number };
type Measured = Record<'singleGet' | 'singleSearch' | 'get' | 'search', Run>;

async function measure(dir: string, variant: Variant, docs: number, quick: boolean) {
  const durationS = quick ? 1 : 5;
  const tailbase = await startTailbase(dir, variant.args);
  try {
    const keys = Array.from({ length: Math.min(GET_KEYS, docs) }, (_, i) =>
      keyOf(Math.floor((i * docs) / Math.min(GET_KEYS, docs))),
    );
    const gets = keys.map((key) => ({ path: `/v1/collections/zipf/docs/${key}` }));
    const searches = Array.from({ length: QUERY_RANKS.to - QUERY_RANKS.from }, (_, i) => ({
      path: `/v1/collections/zipf/search?q=${wordOf(QUERY_RANKS.from + i)}&limit=10`,
    }));
    const run = async (targets: { path: string }[], connections: number): Promise<Run> => {
      const cpuBefore = tailbase.cpuSeconds();
      const started = Date.now();
      const result = await runLoad({
        baseUrl: tailbase.url,
        method: 'GET',
        targets,
        connections,
        threads: Math.min(2, connections),
        durationS,
      });
      const cores = (tailbase.cpuSeconds() - cpuBefore) / ((Date.now() - started) / 1000);
      return { ...result, cores };
    };
    // Unmeasured: the read paths compiled, the stores' pages in the page cache.
    await run(gets, CLIENTS);
    await run(searches, CLIENTS);
    const singleGet = await run(gets, 1);
    const singleSearch = await run(searches, 1);
    const get = await run(gets, CLIENTS);
    const search = await run(searches, CLIENTS);
    return { singleGet, singleSearch, get, search };
  } finally {
    await tailbase.stop();
  }
}

function roundsOf(quick: boolean): number {
  if (quick) return 1;
  const asked = Number(process.env.TAILBASE_BENCH_CORES_ROUNDS ?? ROUNDS_DEFAULT);
  return Number.isSafeInteger(asked) && asked > 0 ? asked : ROUNDS_DEFAULT;
}

/** A variant's rounds as one: the mean of each figure, and each round's rate and p99. */
function meanOf(runs: Run[]): { run: Run; p99sMs: string; rates: string } {
  const mean = (pick: (run: Run) => number) =>
    runs.reduce((sum, run) => sum + pick(run), 0) / runs.length;
  const latency: LatencySummary = {
    p50Ms: mean((r) => r.latency.p50Ms),
    p99Ms: mean((r) => r.latency.p99Ms),
    maxMs: Math.max(...runs.map((r) => r.latency.maxMs)),
    count: runs.reduce((sum, r) => sum + r.latency.count, 0),
  };
  return {
    run: {
      ...runs[0],
      requestsPerSec: mean((r) => r.requestsPerSec),
      cores: mean((r) => r.cores),
      latency,
    },
    p99sMs: runs.map((r) => r.latency.p99Ms.toFixed(2)).join(' / '),
    rates: runs.map((r) => r.requestsPerSec.toFixed(0)).join(' / '),
  };
}

function postgresRows(docs: number, quick: boolean): Promise<WorkloadResult[]> {
  const binary = detectPeers().find((peer) => peer.name === 'postgres')?.binary ?? null;
  if (binary === null) return Promise.resolve([]);
  const select = (clients: number) => ({
    name: `postgres SELECT by key, ${clients} client${clients > 1 ? 's' : ''}`,
    description: `SELECT by primary key over the same ${docs} documents (jsonb), ${clients} pgbench client(s)`,
    script: `\\set k random(0, ${docs - 1})\nSELECT v FROM kv WHERE k = 'doc-' || lpad(:k::text, 7, '0');\n`,
    unit: 'req/s',
    clients,
  });
  return runPostgres(binary, {
    group: 'cores',
    quick,
    setupMsMax: LOAD_WAIT_MS_MAX,
    prepare: async (dir): Promise<Prepared> => {
      const file = join(dir, 'kv.csv');
      const lines: string[] = [];
      for (const { key, value } of corpus(docs)) {
        lines.push(`${key}\t${JSON.stringify(value)}`);
      }
      writeFileSync(file, lines.join('\n') + '\n');
      return {
        setup: ['CREATE TABLE kv (k text PRIMARY KEY, v jsonb NOT NULL)', `COPY kv FROM '${file}'`],
        files: [file],
        runs: [select(1), select(CLIENTS)],
      };
    },
  });
}

export async function runCoresBench(options: BenchOptions): Promise<WorkloadResult[]> {
  if (!tailbaseBuilt()) {
    return [skipRow('cores', 'skipped: not built yet (dist/bin/tailbase.js)')];
  }
  const quick = options.quick === true;
  const docs = corpusDocs(quick);
  const dir = makeBenchDir('cores');
  try {
    const first = await startTailbase(dir, VARIANTS[0].args);
    const loadStarted = Date.now();
    try {
      await load(first.url, docs);
    } finally {
      await first.stop();
    }
    const loadSeconds = (Date.now() - loadStarted) / 1000;
    const rounds: Measured[][] = VARIANTS.map(() => []);
    for (let round = 0; round < roundsOf(quick); round++) {
      const order = VARIANTS.map((_, i) => i);
      if (round % 2 === 1) order.reverse();
      for (const i of order) rounds[i].push(await measure(dir, VARIANTS[i], docs, quick));
    }
    const measured = rounds.map((runs) => ({
      singleGet: meanOf(runs.map((r) => r.singleGet)),
      singleSearch: meanOf(runs.map((r) => r.singleSearch)),
      get: meanOf(runs.map((r) => r.get)),
      search: meanOf(runs.map((r) => r.search)),
    }));
    const before = measured[0];
    const postgres = await postgresRows(docs, quick);
    const pgSingle = postgres[0]?.latency;
    const rows: WorkloadResult[] = [];
    for (const [index, variant] of VARIANTS.entries()) {
      const figures = measured[index];
      const isAfter = variant.targeted === true;
      const compared = index > 0;
      rows.push(
        ...(['singleGet', 'singleSearch'] as const).map((kind) => ({
          group: 'cores',
          name: `${kind === 'singleGet' ? 'GET' : 'search'}, 1 client: ${variant.name}`,
          description: `${kind === 'singleGet' ? 'GET by key' : 'search, top 10'} from one wrk connection, ${docs} documents`,
          throughput: { value: figures[kind].run.requestsPerSec, unit: 'req/s' },
          latency: figures[kind].run.latency,
          figures: {
            docs,
            cores: figures[kind].run.cores,
            roundP99sMs: figures[kind].p99sMs,
            roundRates: figures[kind].rates,
          },
          ratios: [],
          peakRssBytes: {},
          ...(isAfter && pgSingle && kind === 'singleGet'
            ? {
                targets: [
                  {
                    name: 'GET p99, 1 client <= PostgreSQL SELECT p99, 1 client',
                    goal: `<= ${pgSingle.p99Ms.toFixed(2)} ms`,
                    met: figures[kind].run.latency.p99Ms <= pgSingle.p99Ms,
                  },
                ],
              }
            : {}),
        })),
        ...(['get', 'search'] as const).map((kind) => ({
          group: 'cores',
          name: `${kind === 'get' ? 'GET' : 'search'}, ${CLIENTS} clients: ${variant.name}`,
          description: `${kind === 'get' ? 'GET by key' : `search of one word of Zipf rank ${QUERY_RANKS.from}-${QUERY_RANKS.to}, top 10`}, ${CLIENTS} wrk connections, ${docs} documents`,
          throughput: { value: figures[kind].run.requestsPerSec, unit: 'req/s' },
          latency: figures[kind].run.latency,
          figures: {
            docs,
            cores: Number(figures[kind].run.cores.toFixed(2)),
            roundP99sMs: figures[kind].p99sMs,
            roundRates: figures[kind].rates,
          },
          ratios: compared
            ? [
                {
                  reference: 'before (--read-threads 0), same run',
                  value: figures[kind].run.requestsPerSec / before[kind].run.requestsPerSec,
                },
              ]
            : [],
          peakRssBytes: {},
          ...(isAfter
            ? {
                targets: [
                  {
                    name: `${kind} at ${CLIENTS} clients / before`,
                    goal: `>= ${TARGET_RATIO}`,
                    met:
                      figures[kind].run.requestsPerSec / before[kind].run.requestsPerSec >=
                      TARGET_RATIO,
                  },
                ],
              }
            : {}),
        })),
      );
    }
    rows.push({
      group: 'cores',
      name: 'load',
      description: `bulk load of ${docs} synthetic Zipf documents (${BULK_DOCS} a request) until applied and settled`,
      throughput: { value: docs / loadSeconds, unit: 'docs/s' },
      figures: { docs, seconds: loadSeconds },
      ratios: [],
      peakRssBytes: {},
    });
    return [...rows, ...postgres];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
