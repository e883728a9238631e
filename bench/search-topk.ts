/**
 * The search-topk group (issue 27): a serve-node's search store holding a synthetic Zipf corpus
 * (about 770 bytes a document), searched for a mid-frequency word (in about 0.5% of the
 * documents) and a common one, alone, in OR and AND, and filtered by fields of every
 * selectivity (from 50% of the documents to 0.1%), each by FTS5's ranking of every match
 * (`plan: 'fts5'`, what searches did before the top-k lists) and by the top-k lists, alternating
 * in the same run (the top 10 checked identical to FTS5's, keys and scores to 1e-9). The
 * store is driven in this process, through the serve-node's own Replica and search code, not over
 * HTTP: the figures are the search's, without the server around it. The serve-node answers
 * searches on one thread, so the rate of searches back to back is what 16 clients get of it.
 * Also the postings a top-k search read against the word's matches (what its cost follows), and
 * the load's documents/s with and without lists (what they cost to write).
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { encodeBatch, type LogRecord } from '../shared/batch-codec.js';
import { parseFilter } from '../shared/filter/parse.js';
import { SETTINGS_TOPIC } from '../shared/topics.js';
import { parseQuery } from '../serve-node/fts-query.js';
import { Replica } from '../serve-node/replica.js';
import { SEARCH_FILE } from '../serve-node/search-store.js';
import type { SearchPlan } from '../serve-node/search-reads.js';
import { storedPostings } from '../serve-node/topk-index.js';
import { makeBenchDir } from './references.js';
import type { BenchOptions, WorkloadResult } from './types.js';

const PARTITIONS = 8;
const RECORDS_A_BATCH = 1_000;
const VOCABULARY_WORDS = 50_000;
const TITLE_WORDS = 5;
const BODY_WORDS = 100;
/** The Zipf ranks whose words are the workloads': about 0.5% and 37% of the documents. */
const MID_RANK = 1_830;
const COMMON_RANK = 20;
/** A second common word (about 20% of the documents), for queries of two. */
const COMMON_RANK_2 = 40;
const DEPTH = 10;
const TOTAL_EXACT_MAX = 10_000;
/** Searches a plan and word get, and the most time they may take. */
const SEARCHES_MAX = 2_000;
const SEARCH_MS_MAX = 3_000;
const SEARCH_MS_MAX_QUICK = 300;
/**
 * The fields filters test, from a generator of their own (the texts are the same as without
 * them): `category` one of CATEGORIES by Zipf's law (c01 in about 28% of the documents, c05 in
 * about 6%), `n` uniform over 0..N_VALUES-1.
 */
const CATEGORIES = 20;
const N_VALUES = 1_000;
const SETTINGS = { searchable: ['title', 'body'], filterable: ['category', 'n'] };
/** Filters from half the documents to a thousandth. */
const FILTERS = [
  ['50%', 'n < 500'],
  ['c01', 'category = c01'],
  ['5%', 'n < 50'],
  ['0.1%', 'n = 7'],
] as const;
/** A threshold no word reaches: a store without lists, for the load's cost of them. */
export const LISTS_NONE = Number.MAX_SAFE_INTEGER;
export const LISTS_DEFAULT = 1_000;

/** A deterministic 32-bit generator (mulberry32), so every run loads the same corpus. */
function generator(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), state | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 0x1_0000_0000;
  };
}

/** The word of a Zipf rank: letters from its number, so ranks read apart in the results. */
function wordOf(rank: number): string {
  let word = '';
  for (let n = rank + 1; n > 0; n = Math.floor(n / 26)) word += String.fromCharCode(97 + (n % 26));
  return `${word}q`;
}

/**
 * Documents whose words follow Zipf's law (s = 1) over VOCABULARY_WORDS words; bodies of
 * BODY_WORDS words, or with `bodyWordsSpread` of BODY_WORDS - spread to BODY_WORDS + spread
 * (uniform, from a generator of their own, so the texts of a spread of 0 stay the group's).
 */
function* zipfDocs(count: number, bodyWordsSpread = 0): Generator<{ key: string; value: string }> {
  const lengthRandom = generator(29);
  const random = generator(27);
  const fieldRandom = generator(28);
  let categoriesSum = 0;
  for (let i = 1; i <= CATEGORIES; i++) categoriesSum += 1 / i;
  const category = () => {
    let at = fieldRandom() * categoriesSum;
    for (let i = 1; i < CATEGORIES; i++) {
      at -= 1 / i;
      if (at <= 0) return `c${String(i).padStart(2, '0')}`;
    }
    return `c${CATEGORIES}`;
  };
  const cumulative = new Float64Array(VOCABULARY_WORDS);
  let sum = 0;
  for (let i = 0; i < VOCABULARY_WORDS; i++) cumulative[i] = sum += 1 / (i + 1);
  const words = Array.from({ length: VOCABULARY_WORDS }, (_, i) => wordOf(i));
  const word = () => {
    const at = random() * sum;
    let [low, high] = [0, VOCABULARY_WORDS - 1];
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (cumulative[mid] < at) low = mid + 1;
      else high = mid;
    }
    return words[low];
  };
  const text = (n: number) => Array.from({ length: n }, word).join(' ');
  for (let i = 0; i < count; i++) {
    const value = {
      title: text(TITLE_WORDS),
      body: text(
        BODY_WORDS +
          (bodyWordsSpread === 0 ? 0 : Math.round((lengthRandom() * 2 - 1) * bodyWordsSpread)),
      ),
      category: category(),
      n: Math.floor(fieldRandom() * N_VALUES),
    };
    yield { key: `doc-${i.toString().padStart(8, '0')}`, value: JSON.stringify(value) };
  }
}

/**
 * A store holding `count` documents applied RECORDS_A_BATCH a transaction (lists for terms in
 * `listedDfMin` rows, LISTS_NONE: none; bodies as zipfDocs), the load's documents/s and its CPU
 * time a document.
 */
export function load(
  count: number,
  listedDfMin: number,
  bodyWordsSpread = 0,
): { replica: Replica; dir: string; docsPerSec: number; cpuUsPerDoc: number } {
  const dir = makeBenchDir('search-topk');
  const replica = new Replica(dir, { topkListedDfMin: listedDfMin });
  const next = new Array<number>(PARTITIONS).fill(0);
  const started = performance.now();
  const cpuStarted = process.cpuUsage();
  const settings = { key: 'docs', value: Buffer.from(JSON.stringify(SETTINGS)), timestampMs: 0 };
  replica.applyMany([
    { topic: SETTINGS_TOPIC, partition: 0, fromOffset: 0, batches: encodeBatch([settings]) },
  ]);
  let pending: LogRecord[][] = Array.from({ length: PARTITIONS }, () => []);
  const flush = () => {
    replica.applyMany(
      pending.flatMap((records, partition) => {
        if (records.length === 0) return [];
        const fromOffset = next[partition];
        next[partition] += records.length;
        const batches = encodeBatch(records, { baseOffset: fromOffset });
        return [{ topic: 'docs', partition, fromOffset, batches }];
      }),
    );
    pending = pending.map(() => []);
    // As the serve-node's background steps do between applied answers: the lists' merges.
    while (replica.topkMergeStep() !== null);
    // As the serve-node does on its storeFlushMs interval: without it SQLite's WAL only grows.
    replica.flush();
  };
  let i = 0;
  for (const doc of zipfDocs(count, bodyWordsSpread)) {
    const record = { key: doc.key, value: Buffer.from(doc.value), timestampMs: 0 };
    pending[i % PARTITIONS].push(record);
    i += 1;
    if (i % RECORDS_A_BATCH === 0) flush();
  }
  flush();
  // What a serve-node does once a bulk load pauses: the FTS5 segments merged into one.
  for (let step = 0; step < 100_000; step++) {
    if (replica.mergeStep(1_000, { quietMs: 0, writtenPercent: 0 }) === null) break;
  }
  // And then each top-k list merged into one segment.
  while (replica.topkMergeStep(1_000, 0) !== null);
  const cpu = process.cpuUsage(cpuStarted);
  return {
    replica,
    dir,
    docsPerSec: count / ((performance.now() - started) / 1000),
    cpuUsPerDoc: Math.round((cpu.user + cpu.system) / count),
  };
}

interface Measured {
  latencies: number[];
  total: number;
  examined?: number;
}

/** A search of `q`, filtered by `filter` (the filter language's text) when given. */
interface Query {
  q: string;
  filter?: string;
}

function search(replica: Replica, query: Query, plan: SearchPlan, totalMax = TOTAL_EXACT_MAX) {
  const parsed = parseQuery(query.q, { queryBytesMax: 1_024, queryTermsMax: 32 });
  const all = Array.from({ length: PARTITIONS }, (_, p) => p);
  const fields = {
    filter: query.filter === undefined ? null : parseFilter(query.filter),
    sort: [],
  };
  return replica.search.reads.search('docs', all, parsed, DEPTH, totalMax, fields, plan);
}

/** The plans searched in turn, so both meet the same machine load. */
function measure(replica: Replica, query: Query, msMax: number): Record<SearchPlan, Measured> {
  const measured: Record<SearchPlan, Measured> = {
    auto: { latencies: [], total: 0 },
    fts5: { latencies: [], total: 0 },
  };
  const reference = search(replica, query, 'fts5');
  const deadline = performance.now() + msMax;
  for (let i = 0; i < SEARCHES_MAX && performance.now() < deadline; i++) {
    for (const plan of ['fts5', 'auto'] as const) {
      const started = performance.now();
      const found = search(replica, query, plan);
      measured[plan].latencies.push(performance.now() - started);
      measured[plan].total = found.total;
      measured[plan].examined = found.examined;
      if (plan === 'auto' && i === 0) {
        const same = found.matches.every(
          (hit, at) =>
            hit.key === reference.matches[at]?.key &&
            Math.abs(hit.score - reference.matches[at].score) < 1e-9,
        );
        if (!same || found.matches.length !== reference.matches.length) {
          throw new Error(`top-${DEPTH} of ${describe(query)} differs from FTS5's`);
        }
        if (found.total !== reference.total || found.totalExact !== reference.totalExact) {
          throw new Error(`the total of ${describe(query)} differs from FTS5's`);
        }
      }
    }
  }
  return measured;
}

/** The q-quantile of ascending `sorted`. */
export function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
}

const describe = (query: Query) =>
  query.filter === undefined ? query.q : `${query.q} filtered by ${query.filter}`;

function result(
  docs: number,
  label: string,
  query: Query,
  df: number,
  m: Measured,
  plan: SearchPlan,
) {
  const sorted = [...m.latencies].sort((a, b) => a - b);
  const meanMs = sorted.reduce((a, b) => a + b, 0) / sorted.length;
  const planName = plan === 'auto' ? 'top-k' : 'fts5';
  const workload: WorkloadResult = {
    group: 'search-topk',
    name: `search ${label} ${planName} ${docs.toExponential(0)}`,
    description: `${describe(query)}: ${df} of ${docs} documents, top ${DEPTH}, plan ${planName}`,
    throughput: { value: Math.round(1000 / meanMs), unit: 'q/s' },
    latency: {
      p50Ms: quantile(sorted, 0.5),
      p99Ms: quantile(sorted, 0.99),
      maxMs: sorted[sorted.length - 1],
      count: sorted.length,
    },
    figures: {
      matches: df,
      total: m.total,
      ...(m.examined !== undefined ? { postingsExamined: m.examined } : {}),
    },
    ratios: [],
    peakRssBytes: {},
  };
  return workload;
}

/** The matches of a query, counted by FTS5. */
function matchesOf(replica: Replica, query: Query): number {
  return search(replica, query, 'fts5', Number.MAX_SAFE_INTEGER).total;
}

/**
 * Pages of the search store (SQLite's dbstat) holding the lists (every `topk_` table and index)
 * and the FTS5 tables, and the lists' postings: what a posting costs on disk, against FTS5's own.
 */
function listsBytes(dir: string): Record<string, number> {
  const db = new Database(join(dir, SEARCH_FILE), { readonly: true });
  try {
    const bytes = (pattern: string) =>
      db
        .prepare('SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name GLOB ?')
        .pluck()
        .get(pattern) as number;
    let postings = 0;
    for (const _ of storedPostings(db, null)) postings += 1;
    const lists = bytes('topk_*');
    return {
      postings,
      listsBytes: lists,
      ftsBytes: bytes('fts_[0-9]*'),
      listsBytesPerPosting: Math.round((lists / Math.max(postings, 1)) * 10) / 10,
    };
  } finally {
    db.close();
  }
}

/** The sizes loaded: 10^4 in a quick run, else 10^5 and 10^6 up to `docsMax`. */
export function searchTopkSizes(quick: boolean, docsMax: number): number[] {
  return quick ? [10_000] : [100_000, 1_000_000].filter((docs) => docs <= docsMax);
}

export async function runSearchTopkBench(
  options: BenchOptions & { docsMax: number },
): Promise<WorkloadResult[]> {
  const sizes = searchTopkSizes(options.quick, options.docsMax);
  const msMax = options.quick ? SEARCH_MS_MAX_QUICK : SEARCH_MS_MAX;
  const results: WorkloadResult[] = [];
  // Each figure as it comes: a full run takes minutes, most of them loading.
  const report = (workload: WorkloadResult) => {
    results.push(workload);
    const { p50Ms, p99Ms } = workload.latency ?? {};
    process.stdout.write(
      `  ${workload.name}: ${workload.throughput?.value} ${workload.throughput?.unit}` +
        (p50Ms !== undefined ? ` p50 ${p50Ms.toFixed(2)} ms p99 ${p99Ms!.toFixed(2)} ms` : '') +
        ` ${JSON.stringify(workload.figures)}\n`,
    );
  };
  for (const docs of sizes) {
    // The load's cost of the lists, at the first size only: loading twice at 10^6 takes minutes.
    if (docs === sizes[0]) {
      const bare = load(docs, LISTS_NONE);
      await bare.replica.close();
      report(loadResult(docs, 'without lists', bare.docsPerSec, bare.cpuUsPerDoc));
    }
    const { replica, dir, docsPerSec, cpuUsPerDoc } = load(docs, LISTS_DEFAULT);
    const loaded = loadResult(docs, 'with lists', docsPerSec, cpuUsPerDoc);
    report({ ...loaded, figures: { ...loaded.figures, ...listsBytes(dir) } });
    const [mid, common, common2] = [wordOf(MID_RANK), wordOf(COMMON_RANK), wordOf(COMMON_RANK_2)];
    const words = [
      ['mid', mid],
      ['common', common],
      ['mid-or-common', `${mid} OR ${common}`],
      ['mid-and-common', `${mid} ${common}`],
      ['common-or-common', `${common} OR ${common2}`],
      ['common-and-common', `${common} ${common2}`],
    ] as const;
    const queries: Array<[string, Query]> = words.map(([label, q]) => [label, { q }]);
    for (const [label, q] of words.filter(([label]) => !label.includes('-and-'))) {
      for (const [share, filter] of FILTERS)
        queries.push([`${label} filter ${share}`, { q, filter }]);
    }
    for (const [label, query] of queries) {
      const df = matchesOf(replica, query);
      const measured = measure(replica, query, msMax);
      report(result(docs, label, query, df, measured.fts5, 'fts5'));
      report(result(docs, label, query, df, measured.auto, 'auto'));
    }
    await replica.close();
  }
  return results;
}

/**
 * The load's rate, and its CPU time a document (every thread of this process): on a machine
 * others share, the wall clock's rate moves with their load where the CPU time moves less.
 */
function loadResult(
  docs: number,
  label: string,
  docsPerSec: number,
  cpuUsPerDoc: number,
): WorkloadResult {
  return {
    group: 'search-topk',
    name: `load ${label} ${docs.toExponential(0)}`,
    description: `${docs} Zipf documents applied to a serve-node's stores, ${label}`,
    throughput: { value: Math.round(docsPerSec), unit: 'docs/s' },
    figures: { cpuUsPerDoc },
    ratios: [],
    peakRssBytes: {},
  };
}
