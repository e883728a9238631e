/**
 * `npm run bench -- scale` (issue 26 item 1): the synthetic corpus (scale-corpus.ts) at 10^4,
 * 10^5 and 10^6 documents (10^7 with `--scale-max 1e7`; 10^4 alone with `--quick`), each on fresh
 * data, loaded into `tailbase start` through the public API (scale-tailbase.ts) and into
 * PostgreSQL doing the same work (scale-postgres.ts); rows for the suite's table, a table of the
 * curves by size, and a log-log SVG of each curve with PostgreSQL's beside it.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { formatBytes, formatMs, formatRate, formatRatio } from './format.js';
import { skipRow } from './gateway.js';
import { detectPeers } from './peers.js';
import { tailbaseBuilt } from './processes.js';
import { makeBenchDir } from './references.js';
import { renderCurves, type Panel } from './scale-chart.js';
import { writeScaleCorpus } from './scale-corpus.js';
import { runPostgresAtSize, type PostgresScaleFigures } from './scale-postgres.js';
import {
  runTailbaseAtSize,
  type QueryName,
  type ScaleRunOptions,
  type TailbaseScaleFigures,
} from './scale-tailbase.js';
import { renderTable } from './table.js';
import type { BenchOptions, WorkloadResult } from './types.js';

export const SCALE_MAX_DEFAULT = 1e6;
const SIZE_FIRST = 1e4;
const MIB = 1024 * 1024;
/** Issue 26's targets, checked at the largest size of the run. */
const TARGETS = {
  loadVsPostgresMin: 1.5,
  loadPerSecMin: 15_000,
  diskRatioMax: 3,
  rebuildPerSecMin: 20_000,
  restartRebootSMax: 10,
  /** Issue 28 item 3: read p99 during the load against at rest. */
  readDuringLoadRatioMax: 5,
  /** Anonymous memory from 10^5 up, largest / smallest. */
  anonymousGrowthMax: 1.2,
};
const QUERY_NAMES: QueryName[] = ['get', 'search mid', 'search common', 'search filtered'];

export interface ScaleOptions extends BenchOptions {
  /** The largest size of a full run, documents. */
  scaleMax?: number;
  /** The smallest size of a full run, documents (a power of ten; the sizes below it are skipped). */
  scaleMin?: number;
  /** Where the curves' SVG and JSON go. */
  out: string;
  flags?: string[];
}

export interface SizeResult {
  documents: number;
  rawBytes: number;
  tailbase: TailbaseScaleFigures;
  postgres: PostgresScaleFigures | { skipped: string } | { error: string };
}

const POSTGRES_MISSING = 'postgres: skipped: not installed (apt-get install -y postgresql)';

export function scaleSizes(
  quick: boolean,
  scaleMax = SCALE_MAX_DEFAULT,
  scaleMin = SIZE_FIRST,
): number[] {
  if (quick) return [SIZE_FIRST];
  const sizes: number[] = [];
  for (let n = SIZE_FIRST; n <= scaleMax; n *= 10) if (n >= scaleMin) sizes.push(n);
  return sizes;
}

const sizeLabel = (n: number) => `10^${Math.round(Math.log10(n))}`;

async function runSize(
  documents: number,
  postgres: string | null,
  options: ScaleRunOptions,
  onTailbase: (partial: SizeResult) => void,
): Promise<SizeResult> {
  const corpusDir = makeBenchDir('scale-corpus');
  const dataDir = makeBenchDir('scale-data');
  try {
    const corpusFile = join(corpusDir, 'corpus.ndjson');
    const rawBytes = await writeScaleCorpus(corpusFile, documents);
    const tailbase = await runTailbaseAtSize(dataDir, corpusFile, documents, options);
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(corpusDir, { recursive: true, force: true });
    onTailbase({ documents, rawBytes, tailbase, postgres: { skipped: 'postgres: still running' } });
    if (postgres === null) {
      return { documents, rawBytes, tailbase, postgres: { skipped: POSTGRES_MISSING } };
    }
    try {
      const peer = await runPostgresAtSize(postgres, documents, options.quick);
      return { documents, rawBytes, tailbase, postgres: peer };
    } catch (error) {
      // tailbase's figures of this size stand: the failure is PostgreSQL's row.
      const message = error instanceof Error ? error.message.split('\n')[0] : String(error);
      return { documents, rawBytes, tailbase, postgres: { error: `postgres: ${message}` } };
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(corpusDir, { recursive: true, force: true });
  }
}

const measured = (p: SizeResult['postgres']): PostgresScaleFigures | null =>
  'skipped' in p || 'error' in p ? null : p;

function rows(result: SizeResult): WorkloadResult[] {
  const { documents, rawBytes, tailbase: t } = result;
  const pg = measured(result.postgres);
  const size = sizeLabel(documents);
  const out: WorkloadResult[] = [
    {
      group: 'scale',
      name: `${size} load`,
      description: `${documents} synthetic documents (${formatBytes(rawBytes)} NDJSON) in bulk through the API until a strong search answers`,
      throughput: { value: t.loadSearchablePerSec, unit: 'docs/s searchable' },
      figures: {
        documents,
        rawBytes,
        loadAckPerSec: t.loadAckPerSec,
        loadSettledPerSec: t.loadSettledPerSec,
        bulkAckP50Ms: t.bulkAck.p50Ms,
        bulkAckP99Ms: t.bulkAck.p99Ms,
        bulkAckMaxMs: t.bulkAck.maxMs,
        ...t.disk,
        diskVsRaw: t.disk.totalBytes / rawBytes,
        anonymousBytes: t.memory.anonymousBytes,
        mappedFileBytes: t.memory.mappedFileBytes,
        readP99DuringLoadMs: t.readP99DuringLoadMs,
        readP99IdleMs: t.readP99IdleMs,
        rebuildPerSec: t.rebuildPerSec,
        restartCleanS: t.restartCleanS,
        restartKilledS: t.restartKilledS,
        restartRebootS: t.restartRebootS,
      },
      ratios: pg
        ? [{ reference: 'postgres COPY', value: t.loadSearchablePerSec / pg.loadAckPerSec }]
        : [],
      peakRssBytes: { 'tailbase start': t.peakRssBytes },
    },
  ];
  for (const name of QUERY_NAMES) {
    const q = t.queries[name];
    const peer = pg?.queries[name];
    out.push({
      group: 'scale',
      name: `${size} ${name}`,
      description: `one client p50/p99, 16 clients' rate${q.matches > 0 ? `; ${q.matches} matches` : ''}`,
      throughput: { value: q.sixteenPerSec, unit: 'req/s (16 clients)' },
      latency: { ...q.single, maxMs: q.single.maxMs },
      figures: { singlePerSec: q.single.perSec, matches: q.matches, errorCount: q.errors },
      ratios: peer
        ? [
            {
              reference: `postgres ${name} 16 clients`,
              value: q.sixteenPerSec / peer.sixteenPerSec,
            },
          ]
        : [],
      peakRssBytes: {},
    });
  }
  if (pg === null) {
    const peer = result.postgres;
    if ('error' in peer)
      out.push({ ...skipRow('scale', ''), skipped: undefined, error: peer.error });
    if ('skipped' in peer) out.push(skipRow('scale', peer.skipped));
    return out;
  }
  out.push({
    group: 'scale',
    name: `${size} postgres load`,
    description:
      'COPY into a table with a generated tsvector (GIN) and a B-tree, then VACUUM ANALYZE',
    throughput: { value: pg.loadAckPerSec, unit: 'docs/s searchable' },
    figures: {
      loadSettledPerSec: pg.loadSettledPerSec,
      tableBytes: pg.tableBytes,
      dataDirBytes: pg.dataDirBytes,
      diskVsRaw: pg.dataDirBytes / rawBytes,
    },
    ratios: [],
    peakRssBytes: {},
  });
  for (const name of QUERY_NAMES) {
    const q = pg.queries[name];
    out.push({
      group: 'scale',
      name: `${size} postgres ${name}`,
      description: 'pgbench, one client p50/p99, 16 clients rate',
      throughput: { value: q.sixteenPerSec, unit: 'req/s (16 clients)' },
      latency: { ...q.single },
      figures: { singlePerSec: q.single.perSec, errorCount: q.errors },
      ratios: [],
      peakRssBytes: {},
    });
  }
  return out;
}

/** Issue 26's targets on the largest size's load row. */
function addTargets(results: SizeResult[], workloads: WorkloadResult[]): void {
  const last = results[results.length - 1];
  const row = workloads.find((w) => w.name === `${sizeLabel(last.documents)} load`);
  if (row === undefined) return;
  const t = last.tailbase;
  const pg = measured(last.postgres);
  const targets = [
    {
      name: 'load searchable docs/s',
      goal: `>= ${TARGETS.loadPerSecMin}`,
      met: t.loadSearchablePerSec >= TARGETS.loadPerSecMin,
    },
    {
      name: 'bytes on disk / raw NDJSON',
      goal: `<= ${TARGETS.diskRatioMax}`,
      met: t.disk.totalBytes / last.rawBytes <= TARGETS.diskRatioMax,
    },
    {
      name: 'rebuild docs/s',
      goal: `>= ${TARGETS.rebuildPerSecMin}`,
      met: t.rebuildPerSec >= TARGETS.rebuildPerSecMin,
    },
    {
      name: 'restart after a reboot s',
      goal: `<= ${TARGETS.restartRebootSMax}`,
      met: t.restartRebootS <= TARGETS.restartRebootSMax,
    },
    {
      name: 'read p99 during load / idle',
      goal: `<= ${TARGETS.readDuringLoadRatioMax}`,
      met: t.readP99DuringLoadMs <= TARGETS.readDuringLoadRatioMax * t.readP99IdleMs,
    },
  ];
  if (pg !== null) {
    targets.push({
      name: 'load searchable / postgres COPY',
      goal: `>= ${TARGETS.loadVsPostgresMin}`,
      met: t.loadSearchablePerSec >= TARGETS.loadVsPostgresMin * pg.loadAckPerSec,
    });
  }
  const anonymous = results
    .filter((r) => r.documents >= 1e5)
    .map((r) => r.tailbase.memory.anonymousBytes);
  if (anonymous.length >= 2) {
    targets.push({
      name: 'anonymous memory from 10^5, largest / smallest',
      goal: `<= ${TARGETS.anonymousGrowthMax}`,
      met: Math.max(...anonymous) <= TARGETS.anonymousGrowthMax * Math.min(...anonymous),
    });
  }
  row.targets = targets;
}

/** The curves by size, one line a figure, tailbase beside PostgreSQL. */
export function scaleTable(results: SizeResult[]): string {
  const line = (label: string, value: (r: SizeResult) => string) => [label, ...results.map(value)];
  const pg = (r: SizeResult, value: (p: PostgresScaleFigures) => string) => {
    const p = measured(r.postgres);
    return p === null ? '' : ` (pg ${value(p)})`;
  };
  const lines = [
    line(
      'load acknowledged, docs/s',
      (r) => formatRate(r.tailbase.loadAckPerSec) + pg(r, (p) => formatRate(p.loadAckPerSec)),
    ),
    line('load searchable, docs/s', (r) => formatRate(r.tailbase.loadSearchablePerSec)),
    line(
      'bulk request answered, p50 / p99 / max ms',
      ({ tailbase: { bulkAck } }) =>
        `${bulkAck.p50Ms.toFixed(0)} / ${bulkAck.p99Ms.toFixed(0)} / ${bulkAck.maxMs.toFixed(0)}`,
    ),
    line(
      'load settled, docs/s',
      (r) =>
        formatRate(r.tailbase.loadSettledPerSec) + pg(r, (p) => formatRate(p.loadSettledPerSec)),
    ),
    line(
      'disk / raw NDJSON',
      (r) =>
        formatRatio(r.tailbase.disk.totalBytes / r.rawBytes) +
        pg(
          r,
          (p) =>
            `${formatRatio(p.tableBytes / r.rawBytes)}, with WAL ${formatRatio(p.dataDirBytes / r.rawBytes)}`,
        ),
    ),
    line('  log / LMDB / SQLite', (r) =>
      [r.tailbase.disk.logBytes, r.tailbase.disk.lmdbBytes, r.tailbase.disk.sqliteBytes]
        .map((b) => formatRatio(b / r.rawBytes))
        .join(' / '),
    ),
    line(
      'memory anonymous / mapped, MiB',
      (r) =>
        `${(r.tailbase.memory.anonymousBytes / MIB).toFixed(0)} / ${(r.tailbase.memory.mappedFileBytes / MIB).toFixed(0)}`,
    ),
    ...QUERY_NAMES.flatMap((name) => [
      line(`${name} 1 client p50 / p99 ms`, (r) => {
        const q = r.tailbase.queries[name].single;
        return (
          `${formatMs(q.p50Ms)} / ${formatMs(q.p99Ms)}` +
          pg(
            r,
            (p) =>
              `${formatMs(p.queries[name].single.p50Ms)} / ${formatMs(p.queries[name].single.p99Ms)}`,
          )
        );
      }),
      line(
        `${name} 16 clients req/s`,
        (r) =>
          formatRate(r.tailbase.queries[name].sixteenPerSec) +
          pg(r, (p) => formatRate(p.queries[name].sixteenPerSec)),
      ),
    ]),
    line('search matches mid / common / filtered', (r) =>
      ['search mid', 'search common', 'search filtered']
        .map((n) => String(r.tailbase.queries[n as QueryName].matches))
        .join(' / '),
    ),
    line(
      'GET p99 during load / idle, ms',
      (r) => `${formatMs(r.tailbase.readP99DuringLoadMs)} / ${formatMs(r.tailbase.readP99IdleMs)}`,
    ),
    line('rebuild, docs/s', (r) => formatRate(r.tailbase.rebuildPerSec)),
    line('restart clean / kill -9 / reboot, s', (r) =>
      [r.tailbase.restartCleanS, r.tailbase.restartKilledS, r.tailbase.restartRebootS]
        .map((s) => s.toFixed(1))
        .join(' / '),
    ),
  ];
  return renderTable(lines, ['documents', ...results.map((r) => sizeLabel(r.documents))]);
}

export function scalePanels(results: SizeResult[]): Panel[] {
  const curve = (label: string, value: (r: SizeResult) => number, peer = false) => ({
    label,
    peer,
    points: results.map((r) => [r.documents, value(r)] as [number, number]),
  });
  const pgCurve = (label: string, value: (p: PostgresScaleFigures, r: SizeResult) => number) =>
    curve(
      label,
      (r) => {
        const p = measured(r.postgres);
        return p === null ? 0 : value(p, r);
      },
      true,
    );
  const queryPanel = (name: QueryName): Panel => ({
    title: `${name}, one client`,
    unit: 'ms',
    series: [
      curve('tailbase p50', (r) => r.tailbase.queries[name].single.p50Ms),
      curve('tailbase p99', (r) => r.tailbase.queries[name].single.p99Ms),
      pgCurve('postgres p50', (p) => p.queries[name].single.p50Ms),
      pgCurve('postgres p99', (p) => p.queries[name].single.p99Ms),
    ],
  });
  const throughputPanel = (name: QueryName): Panel => ({
    title: `${name}, 16 clients`,
    unit: 'req/s',
    series: [
      curve('tailbase', (r) => r.tailbase.queries[name].sixteenPerSec),
      pgCurve('postgres', (p) => p.queries[name].sixteenPerSec),
    ],
  });
  return [
    {
      title: 'load',
      unit: 'docs/s',
      series: [
        curve('tailbase acknowledged', (r) => r.tailbase.loadAckPerSec),
        curve('tailbase searchable', (r) => r.tailbase.loadSearchablePerSec),
        curve('tailbase settled', (r) => r.tailbase.loadSettledPerSec),
        pgCurve('postgres COPY (searchable)', (p) => p.loadAckPerSec),
        pgCurve('postgres COPY + VACUUM', (p) => p.loadSettledPerSec),
      ],
    },
    {
      title: 'bytes on disk / raw NDJSON',
      unit: 'x',
      series: [
        curve('tailbase total', (r) => r.tailbase.disk.totalBytes / r.rawBytes),
        curve('log', (r) => r.tailbase.disk.logBytes / r.rawBytes),
        curve('LMDB', (r) => r.tailbase.disk.lmdbBytes / r.rawBytes),
        curve('SQLite', (r) => r.tailbase.disk.sqliteBytes / r.rawBytes),
        pgCurve('postgres tables + indexes', (p, r) => p.tableBytes / r.rawBytes),
        pgCurve('postgres data dir (with WAL)', (p, r) => p.dataDirBytes / r.rawBytes),
      ],
    },
    {
      title: 'memory after load',
      unit: 'MiB',
      series: [
        curve('tailbase anonymous', (r) => r.tailbase.memory.anonymousBytes / MIB),
        curve('tailbase mapped files', (r) => r.tailbase.memory.mappedFileBytes / MIB),
      ],
    },
    ...QUERY_NAMES.flatMap((name) => [queryPanel(name), throughputPanel(name)]),
    {
      title: 'rebuild',
      unit: 'docs/s',
      series: [curve('tailbase rebuild', (r) => r.tailbase.rebuildPerSec)],
    },
    {
      title: 'restart until a strong search',
      unit: 's',
      series: [
        curve('after a clean stop', (r) => r.tailbase.restartCleanS),
        curve('after kill -9', (r) => r.tailbase.restartKilledS),
        curve('after a simulated reboot', (r) => r.tailbase.restartRebootS),
      ],
    },
  ];
}

export async function runScaleBench(options: ScaleOptions): Promise<WorkloadResult[]> {
  if (!tailbaseBuilt()) return [skipRow('scale', 'skipped: not built yet (dist/bin/tailbase.js)')];
  const postgres = detectPeers().find((p) => p.name === 'postgres')?.binary ?? null;
  const results: SizeResult[] = [];
  const date = new Date().toISOString();
  const stamp = date.slice(0, 19).replace(/:/g, '-') + (options.quick ? '-quick' : '');
  const title = `tailbase scale ${date.slice(0, 10)}: synthetic corpus, tailbase start beside PostgreSQL 15 (dashed)`;
  mkdirSync(options.out, { recursive: true });
  const write = (name: string) => {
    writeFileSync(join(options.out, `${name}.svg`), renderCurves(title, scalePanels(results)));
    const json = JSON.stringify({ date, quick: options.quick, results }, null, 2) + '\n';
    writeFileSync(join(options.out, `${name}.json`), json);
  };
  for (const documents of scaleSizes(options.quick, options.scaleMax, options.scaleMin)) {
    process.stdout.write(`  scale: ${sizeLabel(documents)} documents...\n`);
    // tailbase's figures are written before PostgreSQL's turn at the same size, which can take
    // hours at 10^7: a run stopped meanwhile keeps them.
    const runOptions = { quick: options.quick, flags: options.flags };
    const result = await runSize(documents, postgres, runOptions, (partial) => {
      results.push(partial);
      write(`scale-${stamp}`);
      results.pop();
    });
    results.push(result);
    // After each size, so a run that fails or is stopped later keeps what it measured.
    write(`scale-${stamp}`);
  }
  const workloads = results.flatMap(rows);
  addTargets(results, workloads);
  process.stdout.write(`\n${scaleTable(results)}\n\n`);
  if (!options.quick) write('scale-latest');
  return workloads;
}
