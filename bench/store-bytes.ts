/**
 * Where the bytes on disk go (issue 26): `node dist/bench/store-bytes.js [--docs 1e5]
 * [--bin other/dist/bin/tailbase.js ...] [-- tailbase start flags]` loads the scale group's first
 * N documents under its settings into a fresh `tailbase start` of each build in turn, stops it
 * cleanly (SQLite's WAL folded in), and prints each store's bytes against the raw NDJSON:
 * SQLite by table and index (SQLite's dbstat: pages, payload, unused bytes in pages), LMDB by
 * database (pages, entries, key and value bytes, page fill), the log's segments and what
 * Kafka's gzip codec would make of its batches (each batch's records compressed with Node's
 * zlib, as a producer with compression.type=gzip would send them). Beside them: the load's rate
 * until searchable and the process's CPU a document over it, and one client's GET p50.
 */
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import Database from 'better-sqlite3';
import { Command } from 'commander';
import { open } from 'lmdb';
import { DOCS_FILE } from '../serve-node/doc-store.js';
import { SEARCH_FILE } from '../serve-node/search-store.js';
import { BATCH_HEADER_BYTES, iterateBatches } from '../shared/batch-codec.js';
import { request, settled } from './api-workloads.js';
import { diskUsage, diskUsageAtRest, type DiskUsage } from './disk-usage.js';
import { startEmbedded } from './embedded.js';
import { TAILBASE_BIN } from './processes.js';
import { makeBenchDir, removeBenchDirs } from './references.js';
import { keyOfScale, scaleDoc } from './scale-corpus.js';
import { COLLECTION, postLines, SETTINGS, strongSearch, waitMsMax } from './scale-tailbase.js';
import { quantile } from './search-topk.js';
import { seededRandom } from './seeded-random.js';

const GET_READS = 2_000;
/**
 * Applying and settling 10^5 documents takes 20-200 s on the shared 2-core machine: slower than
 * this (100 documents a second), the run has failed.
 */
const APPLIED_MS_PER_DOC_MAX = 10;

interface Row {
  name: string;
  bytes: number;
  detail: string;
}

const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
const ratio = (bytes: number, raw: number) => (bytes / raw).toFixed(2);

/** The scale group's first `documents` under its settings, a bulk request at a time: raw bytes. */
async function load(url: string, documents: number): Promise<number> {
  await request(`${url}/v1/collections/${COLLECTION}/settings`, {
    method: 'PUT',
    body: JSON.stringify(SETTINGS),
  });
  let raw = 0;
  function* lines(): Generator<string> {
    for (let i = 0; i < documents; i++) {
      const line = JSON.stringify(scaleDoc(i));
      raw += Buffer.byteLength(line) + 1;
      yield line;
    }
  }
  await postLines(url, lines(), () => {}, { inFlightMax: 1 });
  return raw;
}

/** The one store generation of a stopped serve-node's data directory. */
function storesDir(dataDir: string): string {
  const serve = join(dataDir, 'serve');
  const generations = readdirSync(serve).filter((name) => name.startsWith('stores-'));
  if (generations.length !== 1)
    throw new Error(`expected one store generation, got ${generations}`);
  return join(serve, generations[0]);
}

/** SQLite by table and index, FTS5's shadow tables named by their role. */
function sqliteRows(path: string): Row[] {
  const db = new Database(path, { readonly: true });
  try {
    const pageBytes = db.pragma('page_size', { simple: true }) as number;
    const rows = db
      .prepare(
        'SELECT name, count(*) AS pages, sum(payload) AS payload, sum(unused) AS unused ' +
          'FROM dbstat GROUP BY name',
      )
      .all() as Array<{ name: string; pages: number; payload: number; unused: number }>;
    const grouped = new Map<string, { pages: number; payload: number; unused: number }>();
    for (const row of rows) {
      const name = row.name.replace(/^fts_\d+_/, 'fts5 ');
      const sum = grouped.get(name) ?? { pages: 0, payload: 0, unused: 0 };
      sum.pages += row.pages;
      sum.payload += row.payload;
      sum.unused += row.unused;
      grouped.set(name, sum);
    }
    const freePages = db.pragma('freelist_count', { simple: true }) as number;
    grouped.set('(free pages)', { pages: freePages, payload: 0, unused: freePages * pageBytes });
    return [...grouped]
      .map(([name, { pages, payload, unused }]) => ({
        name: `sqlite ${name}`,
        bytes: pages * pageBytes,
        detail: `${pages} pages of ${pageBytes}, payload ${mib(payload)} MiB, unused ${mib(unused)} MiB`,
      }))
      .sort((a, b) => b.bytes - a.bytes);
  } finally {
    db.close();
  }
}

interface LmdbStat {
  pageSize: number;
  treeBranchPageCount: number;
  treeLeafPageCount: number;
  overflowPages: number;
  entryCount: number;
}

/** LMDB by database, values as stored (compressed or not: the store is opened without it). */
async function lmdbRows(path: string): Promise<Row[]> {
  const env = open({ path, readOnly: true, compression: false });
  try {
    const rows: Row[] = [];
    const root = env.getStats() as LmdbStat & { lastPageNumber: number };
    let treePages = 0;
    for (const name of ['docs', 'meta']) {
      const db = env.openDB<Buffer, Buffer>({ name, keyEncoding: 'binary', encoding: 'binary' });
      const stats = db.getStats() as LmdbStat;
      let keyBytes = 0;
      let valueBytes = 0;
      for (const { key, value } of db.getRange({})) {
        keyBytes += key.length;
        valueBytes += value.length;
      }
      const pages = stats.treeBranchPageCount + stats.treeLeafPageCount + stats.overflowPages;
      treePages += pages;
      // An LMDB leaf node: a 2-byte pointer to it and an 8-byte header before key and value.
      const fill = (keyBytes + valueBytes + stats.entryCount * 10) / (pages * stats.pageSize);
      rows.push({
        name: `lmdb ${name}`,
        bytes: pages * stats.pageSize,
        detail:
          `${stats.entryCount} entries, ${stats.treeLeafPageCount} leaf + ${stats.treeBranchPageCount} ` +
          `branch + ${stats.overflowPages} overflow pages, keys ${mib(keyBytes)} MiB, values ` +
          `${mib(valueBytes)} MiB, fill ${(fill * 100).toFixed(0)}%`,
      });
    }
    const usedPages = root.lastPageNumber + 1;
    rows.push({
      name: 'lmdb (free, meta and catalog pages)',
      bytes: (usedPages - treePages) * root.pageSize,
      detail: `${usedPages} pages up to the last written`,
    });
    return rows;
  } finally {
    await env.close();
  }
}

/** The log's segments, and each batch's records gzipped as Kafka's codec 1 would carry them. */
function logRows(logDir: string): Row[] {
  const topicDir = join(logDir, 'topics', COLLECTION);
  let segmentBytes = 0;
  let batches = 0;
  let recordsBytes = 0;
  let gzippedBytes = 0;
  for (const partition of readdirSync(topicDir)) {
    const dir = join(topicDir, partition);
    if (!statSync(dir).isDirectory()) continue;
    for (const name of readdirSync(dir).filter((file) => file.endsWith('.log'))) {
      const bytes = readFileSync(join(dir, name));
      segmentBytes += bytes.length;
      for (const { bytes: batch } of iterateBatches(bytes)) {
        const records = batch.subarray(BATCH_HEADER_BYTES);
        batches++;
        recordsBytes += records.length;
        gzippedBytes += BATCH_HEADER_BYTES + gzipSync(records).length;
      }
    }
  }
  return [
    {
      name: `log ${COLLECTION} segments`,
      bytes: segmentBytes,
      detail: `${batches} batches, ${mib(segmentBytes / batches)} MiB a batch, records ${mib(recordsBytes)} MiB`,
    },
    {
      name: `log ${COLLECTION} if gzip (estimate)`,
      bytes: gzippedBytes,
      detail: `${((gzippedBytes / segmentBytes) * 100).toFixed(0)}% of the segments`,
    },
  ];
}

function printUsage(label: string, usage: DiskUsage, raw: number): void {
  process.stdout.write(
    `  ${label}: total ${mib(usage.totalBytes)} MiB = ${ratio(usage.totalBytes, raw)}x raw ` +
      `(log ${ratio(usage.logBytes, raw)}x, LMDB ${ratio(usage.lmdbBytes, raw)}x, ` +
      `SQLite ${ratio(usage.sqliteBytes, raw)}x, other ${mib(usage.otherBytes)} MiB)\n`,
  );
}

/** One client's GETs of keys drawn at random: the p50, ms. */
async function getP50Ms(url: string, documents: number): Promise<number> {
  const next = seededRandom(26);
  const times: number[] = [];
  for (let i = 0; i < GET_READS; i++) {
    const key = keyOfScale(Math.floor(next() * documents));
    const started = performance.now();
    const response = await fetch(`${url}/v1/collections/${COLLECTION}/docs/${key}`);
    await response.arrayBuffer();
    if (!response.ok) throw new Error(`GET ${key}: ${response.status}`);
    times.push(performance.now() - started);
  }
  return quantile(
    times.sort((a, b) => a - b),
    0.5,
  );
}

async function measureBuild(
  bin: string,
  flags: string[],
  documents: number,
  keep: boolean,
): Promise<void> {
  const dir = makeBenchDir('store-bytes');
  process.stdout.write(`${bin} ${flags.join(' ')}${keep ? ` (data kept in ${dir})` : ''}\n`);
  let server = await startEmbedded(dir, { bin, flags });
  let raw: number;
  try {
    const cpuBefore = server.cpuSeconds();
    const started = performance.now();
    raw = await load(server.url, documents);
    await strongSearch(server.url, documents, waitMsMax(documents, APPLIED_MS_PER_DOC_MAX));
    const searchableS = (performance.now() - started) / 1000;
    const cpuUs = ((server.cpuSeconds() - cpuBefore) * 1e6) / documents;
    await settled(server.url, waitMsMax(documents, APPLIED_MS_PER_DOC_MAX));
    process.stdout.write(
      `  load until searchable ${Math.round(documents / searchableS)} docs/s, ` +
        `process CPU ${cpuUs.toFixed(0)} us a document\n`,
    );
    printUsage('running, after the load', diskUsage(dir), raw);
    printUsage('running, at rest', await diskUsageAtRest(dir), raw);
    process.stdout.write(`  GET p50 ${(await getP50Ms(server.url, documents)).toFixed(3)} ms\n`);
  } finally {
    await server.stop();
  }
  printUsage('stopped', diskUsage(dir), raw);
  const stores = storesDir(dir);
  const rows = [
    ...logRows(join(dir, 'log')),
    ...(await lmdbRows(join(stores, DOCS_FILE))),
    ...sqliteRows(join(stores, SEARCH_FILE)),
  ];
  process.stdout.write(`  raw NDJSON: ${mib(raw)} MiB, ${documents} documents\n`);
  for (const { name, bytes, detail } of rows) {
    process.stdout.write(
      `  ${name.padEnd(40)} ${mib(bytes).padStart(8)} MiB ${ratio(bytes, raw).padStart(6)}x  ${detail}\n`,
    );
  }
  if (keep) return;
  rmSync(dir, { recursive: true, force: true });
}

async function main(): Promise<void> {
  const program = new Command()
    .option('--docs <n>', "the scale group's first N documents", '1e5')
    .option('--bin <path...>', 'bin/tailbase.js of each build to compare', [TAILBASE_BIN])
    .option('--rounds <n>', 'runs of each build, alternating', '1')
    .option('--keep', 'keep each data directory and print its path', false)
    .argument('[flags...]', 'flags for tailbase start')
    .parse();
  const opts = program.opts<{ docs: string; bin: string[]; rounds: string; keep: boolean }>();
  const flags = program.args;
  const documents = Number(opts.docs);
  try {
    for (let round = 0; round < Number(opts.rounds); round++) {
      for (const bin of opts.bin) await measureBuild(bin, flags, documents, opts.keep);
    }
  } finally {
    if (!opts.keep) removeBenchDirs();
  }
}

await main();
