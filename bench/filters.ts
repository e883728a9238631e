/**
 * `npm run bench -- filters` (issue 16): `tailbase start` holding the search corpus with `year`
 * (100 values) and `genre` (20 values) added to each document from its key, both filterable and
 * year sortable, under wrk like the other search rows: unfiltered search (the reference), search
 * with a filter that selects 1% of documents, search sorted by year, and a query matching at least
 * 10,000 documents with and without two facets; then PostgreSQL doing the same queries
 * (filters-postgres.ts) when it is installed. The corpus is loaded as many times as it takes for
 * the wide query to reach 10,000 matches (4 times over 3371 documents), so every row of the group
 * searches the same documents.
 */
import { rmSync } from 'node:fs';
import { request, settled } from './api-workloads.js';
import { loadCorpus } from './corpus.js';
import { startEmbedded } from './embedded.js';
import {
  documentsWith,
  RARE_YEAR,
  WIDE_MATCHES_MIN,
  WIDE_QUERY,
  withFields,
  type FieldDoc,
} from './filter-fields.js';
import { POSTGRES_ROWS, runFiltersPostgres } from './filters-postgres.js';
import { skipRow } from './gateway.js';
import { runLoad } from './load.js';
import { detectPeers } from './peers.js';
import { tailbaseBuilt } from './processes.js';
import { makeBenchDir } from './references.js';
import type { BenchOptions, WorkloadResult } from './types.js';
import { CONNECTIONS, SEARCH_TERMS_MAX, searchCorpus, searchTerms } from './workload.js';

const BULK_CHUNK = 500;
/** The serve-node applying the loaded corpus: past this the group fails. */
const LOAD_WAIT_MS_MAX = 120_000;
const SETTINGS = { filterable: ['year', 'genre'], sortable: ['year'] };
const FILTER = `year = ${RARE_YEAR}`;
const FACETS = 'genre,year';
/** Targets of issue 16, on the ratios of the same run. */
const FILTERED_VS_UNFILTERED_MIN = 1.0;
const FACETS_VS_PLAIN_MIN = 0.5;
const VS_POSTGRES_MIN = 1.0;

interface Row {
  name: keyof typeof POSTGRES_ROWS;
  label: string;
  description: string;
  paths: string[];
}

const search = (q: string, extra = '') =>
  `/v1/collections/corpus/search?q=${encodeURIComponent(q)}&limit=10${extra}`;

function rows(docs: number, terms: string[]): Row[] {
  const each = (extra: string) => terms.map((t) => search(t, extra));
  const over = `over ${docs} real documents, ${CONNECTIONS} connections, tailbase start`;
  return [
    {
      name: 'search',
      label: 'search',
      description: `top-10 search and the total, one title word of ${terms.length}, ${over}`,
      paths: each(''),
    },
    {
      name: 'filtered',
      label: 'search filtered 1%',
      description: `as search, filter=${FILTER} (1% of documents)`,
      paths: each(`&filter=${encodeURIComponent(FILTER)}`),
    },
    {
      name: 'sorted',
      label: 'search sorted',
      description: 'as search, sort=year:desc',
      paths: each('&sort=year:desc'),
    },
    {
      name: 'wide',
      label: 'search wide',
      description: `top-10 search of q=${WIDE_QUERY} and the total (counted up to 10,000), ${over}`,
      paths: [search(WIDE_QUERY)],
    },
    {
      name: 'facets',
      label: 'search wide + 2 facets',
      description: `as search wide, facets=${FACETS} counted over every match`,
      paths: [search(WIDE_QUERY, `&facets=${FACETS}`)],
    },
  ];
}

/** The corpus with its fields, loaded enough times for the wide query's 10,000 matches. */
async function filterCorpus(quick: boolean): Promise<{ docs: FieldDoc[]; terms: string[] }> {
  const base = searchCorpus((await loadCorpus()).docs, quick);
  // A quick run checks the workloads run, on one copy of its 500 documents.
  const copies = quick ? 1 : Math.ceil(WIDE_MATCHES_MIN / documentsWith(base, WIDE_QUERY));
  return { docs: withFields(base, copies), terms: searchTerms(base, SEARCH_TERMS_MAX) };
}

/** Loads `docs` after the settings, waits with a strong read, and returns the wide matches. */
async function load(url: string, docs: readonly FieldDoc[]): Promise<number> {
  const collection = `${url}/v1/collections/corpus`;
  await request(`${collection}/settings`, { method: 'PUT', body: JSON.stringify(SETTINGS) });
  for (let i = 0; i < docs.length; i += BULK_CHUNK) {
    const chunk = docs.slice(i, i + BULK_CHUNK).map((d) => ({ key: d.key, value: d.value }));
    await request(`${collection}/docs`, { method: 'POST', body: JSON.stringify(chunk) });
  }
  // A strong read waits at most 30 s; four copies of the corpus may take longer to apply.
  const startedMs = Date.now();
  const strong = `${collection}/docs?limit=1&consistency=strong&wait_ms=30000`;
  while ((await fetch(strong, { signal: AbortSignal.timeout(LOAD_WAIT_MS_MAX) })).status !== 200) {
    if (Date.now() - startedMs > LOAD_WAIT_MS_MAX) throw new Error('the corpus was not applied');
  }
  await settled(url, LOAD_WAIT_MS_MAX);
  // Every document has one genre: the genre counts add up to the wide query's matches.
  const { body } = await request(`${url}${search(WIDE_QUERY, `&facets=genre`)}`);
  const genres = body.facets?.genre;
  if (genres === undefined) throw new Error(`no genre facet in ${JSON.stringify(body)}`);
  if (genres.omitted !== 0) throw new Error(`genre facet left ${genres.omitted} values out`);
  return (genres.values as Array<{ count: number }>).reduce((n, v) => n + v.count, 0);
}

export async function runFiltersBench(options: BenchOptions): Promise<WorkloadResult[]> {
  if (!tailbaseBuilt())
    return [skipRow('filters', 'skipped: not built yet (dist/bin/tailbase.js)')];
  const quick = options.quick;
  const { docs, terms } = await filterCorpus(quick);
  const plan = rows(docs.length, terms);
  const dir = makeBenchDir('filters');
  const results: WorkloadResult[] = [];
  let wideMatches: number;
  try {
    const tailbase = await startEmbedded(dir);
    try {
      wideMatches = await load(tailbase.url, docs);
      const durationS = quick ? 1 : 5;
      const measure = (paths: string[], seconds: number) =>
        runLoad({
          baseUrl: tailbase.url,
          method: 'GET',
          targets: paths.map((path) => ({ path })),
          connections: CONNECTIONS,
          threads: 2,
          durationS: seconds,
        });
      // Unmeasured: the search path compiled and the store's pages cached before the first row.
      await measure(plan[0].paths, quick ? 1 : 2);
      for (const row of plan) {
        tailbase.resetPeakRss();
        const result = await measure(row.paths, durationS);
        results.push({
          group: 'filters',
          name: row.label,
          description: row.description,
          throughput: { value: result.requestsPerSec, unit: 'queries/s' },
          latency: result.latency,
          figures: { errorCount: result.errors, documents: docs.length },
          ratios: [],
          peakRssBytes: { 'tailbase start': tailbase.peakRssBytes() },
        });
      }
    } finally {
      await tailbase.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const postgres = detectPeers().find((p) => p.name === 'postgres')?.binary ?? null;
  const peerRows =
    postgres === null
      ? [skipRow('filters', 'postgres: skipped: not installed (apt-get install -y postgresql)')]
      : await runFiltersPostgres(postgres, docs, terms, quick);
  addRatios(results, peerRows, plan, wideMatches, docs);
  return [...results, ...peerRows];
}

/** The issue's ratios and targets, written onto the tailbase rows. */
function addRatios(
  results: WorkloadResult[],
  peers: WorkloadResult[],
  plan: Row[],
  wideMatches: number,
  docs: readonly FieldDoc[],
): void {
  const rate = (rows: WorkloadResult[], name: string) =>
    rows.find((r) => r.name === name)?.throughput?.value ?? 0;
  const ours = (name: Row['name']) => results[plan.findIndex((row) => row.name === name)];
  const ratio = (row: WorkloadResult, reference: string, base: number, min?: number) => {
    const value = base > 0 ? row.throughput!.value / base : 0;
    row.ratios.push({ reference, value });
    if (min !== undefined) {
      row.targets ??= [];
      row.targets.push({
        name: `${row.name} / ${reference}`,
        goal: `>= ${min}`,
        met: value >= min,
      });
    }
  };
  const search = ours('search');
  ratio(ours('filtered'), search.name, search.throughput!.value, FILTERED_VS_UNFILTERED_MIN);
  ours('filtered').figures.filterSelectsDocs = docs.filter(
    (d) => d.value.year === RARE_YEAR,
  ).length;
  const wide = ours('wide');
  ratio(ours('facets'), wide.name, wide.throughput!.value, FACETS_VS_PLAIN_MIN);
  ours('facets').figures.wideMatches = wideMatches;
  for (const row of plan) {
    const peer = POSTGRES_ROWS[row.name];
    const needsTarget = row.name === 'filtered' || row.name === 'sorted' || row.name === 'facets';
    if (rate(peers, peer) > 0) {
      ratio(ours(row.name), peer, rate(peers, peer), needsTarget ? VS_POSTGRES_MIN : undefined);
    }
  }
}
