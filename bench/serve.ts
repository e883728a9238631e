/**
 * `npm run bench -- serve` (issue 3): a real `tailbase serve-node` process replaying a real
 * log-node over its Kafka listener, each figure printed beside the bare engine it is built on, measured in the same run:
 * - replay: documents/s from an empty data dir into LMDB + FTS5, beside a bare FTS5 insert loop;
 * - get: p50/p99 and requests/s over HTTP, beside bare LMDB gets on the same file;
 * - search: queries/s for one and two terms on real text (the corpus), beside bare FTS5 queries.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { open } from 'lmdb';
import { encodeBatch, type LogRecord } from '../shared/batch-codec.js';
import { KafkaLogClient } from '../shared/kafka-log/index.js';
import { createLogger } from '../shared/logger.js';
import { partitionFor } from '../shared/partitioner.js';
import { startServeNode } from '../serve-node/index.js';
import { loadCorpus, type CorpusDoc } from './corpus.js';
import { runLoad } from './load.js';
import {
  freePort,
  spawnLogNode,
  spawnTailbase,
  tailbaseBuilt,
  type RunningProcess,
} from './processes.js';
import { makeBenchDir } from './references.js';
import type { BenchOptions, WorkloadResult } from './types.js';
import { seededRandom } from './seeded-random.js';

const PARTITIONS = 4;
const RECORDS_PER_BATCH = 1_000;
const WORDS_PER_DOC = 30;
const TOKENIZER = 'unicode61 remove_diacritics 2';
const RAW_TRANSACTION_DOCS = 5_000;
const REPLAY_POLL_MS = 5;
const REPLAY_MS_MAX = 300_000;
const REPLAY_RATIO_TARGET = 0.7;
const LOAD_CONNECTIONS = 16;
const QUERY_COUNT = 200;

interface BenchDoc {
  key: string;
  value: { title: string; body: string };
}

/** Distinct words of the corpus, most frequent first. */
function vocabulary(corpus: readonly CorpusDoc[]): string[] {
  const counts = new Map<string, number>();
  for (const doc of corpus) {
    for (const word of doc.value.body.toLowerCase().match(/\p{L}{3,}/gu) ?? []) {
      counts.set(word, (counts.get(word) ?? 0) + 1);
    }
  }
  return [...counts.entries()].sort((a, b) => b[1] - a[1]).map(([word]) => word);
}

/** Documents of ~30 words drawn with a skew towards frequent words, as real text is. */
function makeDocs(count: number, words: readonly string[]): BenchDoc[] {
  const next = seededRandom(42);
  const pick = () => words[Math.floor(next() ** 2 * words.length)];
  return Array.from({ length: count }, (_, i) => {
    const text = Array.from({ length: WORDS_PER_DOC }, pick);
    return {
      key: `doc-${String(i).padStart(7, '0')}`,
      value: { title: text.slice(0, 4).join(' '), body: text.slice(4).join(' ') },
    };
  });
}

function elapsedSince(startNs: bigint): number {
  return Number(process.hrtime.bigint() - startNs) / 1e9;
}

/** The reference: the same documents into one bare FTS5 table, as fast as SQLite takes them. */
export function rawFtsInsertRate(docs: readonly BenchDoc[]): number {
  const dir = makeBenchDir('serve-raw');
  try {
    const db = new Database(join(dir, 'raw.sqlite'));
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.exec(`CREATE VIRTUAL TABLE t USING fts5(title, body, tokenize = '${TOKENIZER}')`);
    const insert = db.prepare('INSERT INTO t (rowid, title, body) VALUES (?, ?, ?)');
    const started = process.hrtime.bigint();
    for (let at = 0; at < docs.length; at += RAW_TRANSACTION_DOCS) {
      db.transaction(() => {
        for (let i = at; i < Math.min(at + RAW_TRANSACTION_DOCS, docs.length); i++) {
          const doc = docs[i];
          insert.run(i + 1, doc.value.title, doc.value.body);
        }
      })();
    }
    const seconds = elapsedSince(started);
    db.close();
    return docs.length / seconds;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Appends documents to the collection's topic, each in the partition Kafka's partitioner puts it
 * in, one batch per partition at a time, all partitions in parallel.
 */
async function appendDocs(log: KafkaLogClient, collection: string, docs: readonly BenchDoc[]) {
  const byPartition: LogRecord[][] = Array.from({ length: PARTITIONS }, () => []);
  for (const doc of docs) {
    byPartition[partitionFor(doc.key, PARTITIONS)].push({
      key: doc.key,
      value: Buffer.from(JSON.stringify(doc.value)),
      timestampMs: Date.now(),
    });
  }
  await Promise.all(
    byPartition.map(async (records, partition) => {
      for (let at = 0; at < records.length; at += RECORDS_PER_BATCH) {
        const batch = encodeBatch(records.slice(at, at + RECORDS_PER_BATCH));
        await log.append(collection, partition, batch);
      }
    }),
  );
}

async function appliedTotal(url: string): Promise<number> {
  const response = await fetch(`${url}/internal/status`);
  const status = (await response.json()) as { partitions: Array<{ applied: number }> };
  return status.partitions.reduce((sum, p) => sum + p.applied, 0);
}

async function waitApplied(url: string, total: number): Promise<void> {
  const deadline = Date.now() + REPLAY_MS_MAX;
  while ((await appliedTotal(url).catch(() => 0)) < total) {
    if (Date.now() > deadline) throw new Error(`serve-node did not apply ${total} records`);
    await new Promise((resolve) => setTimeout(resolve, REPLAY_POLL_MS));
  }
}

/**
 * Replay in this process: the clock starts at startServeNode and stops when the node's own
 * status says every record is applied, polled without HTTP, so nothing else is timed.
 */
async function measureReplay(
  dataDir: string,
  logUrl: string,
  records: number,
): Promise<{ seconds: number; peakRssBytes: number }> {
  const started = process.hrtime.bigint();
  const node = await startServeNode({
    dataDir,
    logUrls: [logUrl],
    logger: createLogger('serve-node', 'warn'),
  });
  try {
    const deadline = Date.now() + REPLAY_MS_MAX;
    const applied = () => node.node.status().partitions.reduce((sum, p) => sum + p.applied, 0);
    while (applied() < records) {
      if (Date.now() > deadline) throw new Error(`serve-node did not apply ${records} records`);
      await new Promise((resolve) => setTimeout(resolve, REPLAY_POLL_MS));
    }
    return { seconds: elapsedSince(started), peakRssBytes: process.resourceUsage().maxRSS * 1024 };
  } finally {
    await node.stop();
  }
}

/** Bare LMDB gets of the same keys on the serve-node's own file (LMDB allows other readers). */
function bareLmdbGetRate(dataDir: string, keys: readonly string[], seconds: number): number {
  const env = open({ path: join(dataDir, 'stores-1', 'docs.mdb'), readOnly: true });
  const docs = env.openDB<Buffer, Buffer>({
    name: 'docs',
    keyEncoding: 'binary',
    encoding: 'binary',
  });
  const encoded = keys.map((key) => Buffer.from(`bench\u0000${key}`));
  let gets = 0;
  const started = process.hrtime.bigint();
  while (elapsedSince(started) < seconds) {
    for (let i = 0; i < 1_000; i++) {
      if (docs.get(encoded[gets % encoded.length]) === undefined) throw new Error('key missing');
      gets++;
    }
  }
  const rate = gets / elapsedSince(started);
  void env.close();
  return rate;
}

/** Bare FTS5 top-10 queries over the corpus in one plain table. */
function bareFtsQueryRate(
  corpus: readonly CorpusDoc[],
  queries: string[],
  seconds: number,
): number {
  const db = new Database(':memory:');
  db.exec(`CREATE VIRTUAL TABLE t USING fts5(title, body, tokenize = '${TOKENIZER}')`);
  const insert = db.prepare('INSERT INTO t (title, body) VALUES (?, ?)');
  db.transaction(() => {
    for (const doc of corpus) insert.run(doc.value.title, doc.value.body);
  })();
  const query = db.prepare(
    'SELECT rowid, bm25(t) FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 10',
  );
  const fts = queries.map((q) =>
    q
      .split(' ')
      .map((w) => `"${w}"`)
      .join(' AND '),
  );
  let count = 0;
  const started = process.hrtime.bigint();
  while (elapsedSince(started) < seconds) {
    query.all(fts[count % fts.length]);
    count++;
  }
  const rate = count / elapsedSince(started);
  db.close();
  return rate;
}

function ratio(reference: string, value: number, over: number) {
  return { reference, value: over > 0 ? value / over : 0 };
}

export async function runServeBench(
  options: BenchOptions,
): Promise<{ workloads: WorkloadResult[] }> {
  if (!tailbaseBuilt()) {
    const skipped = 'skipped: not built yet (dist/bin/tailbase.js)';
    return {
      workloads: [
        {
          group: 'serve',
          name: 'replay',
          description: '',
          figures: {},
          ratios: [],
          peakRssBytes: {},
          skipped,
        },
      ],
    };
  }
  const docCount = options.quick ? 10_000 : 200_000;
  const loadS = options.quick ? 1 : 5;
  const corpus = (await loadCorpus()).docs;
  const words = vocabulary(corpus);
  const docs = makeDocs(docCount, words.slice(0, 20_000));
  const rawPerSec = rawFtsInsertRate(docs);

  const logDir = makeBenchDir('serve-log');
  const serveDir = makeBenchDir('serve-node');
  const kafkaPort = await freePort();
  const logNode = await spawnLogNode(logDir, PARTITIONS, ['--kafka-port', String(kafkaPort)]);
  const logUrl = `kafka://127.0.0.1:${kafkaPort}`;
  let serve: RunningProcess | undefined;
  let log: KafkaLogClient | undefined;
  try {
    log = await KafkaLogClient.connect({
      bootstrap: [`127.0.0.1:${kafkaPort}`],
      logger: createLogger('kafka-log', 'warn'),
    });
    await appendDocs(log, 'bench', docs);
    const replay = await measureReplay(serveDir, logUrl, docCount);
    const replayPerSec = docCount / replay.seconds;
    // The same data directory in a process of its own for the loads: it resumes from checkpoints.
    serve = await spawnTailbase('serve-node', ['--data', serveDir, '--log', logUrl]);

    await appendDocs(log, 'corpus', corpus);
    await waitApplied(serve.url, docCount + corpus.length);

    const next = seededRandom(7);
    const getKeys = Array.from({ length: 1_000 }, () => docs[Math.floor(next() * docs.length)].key);
    const get = await runLoad({
      baseUrl: serve.url,
      method: 'GET',
      targets: getKeys.map((key) => ({ path: `/internal/docs/bench/${key}` })),
      connections: LOAD_CONNECTIONS,
      threads: 2,
      durationS: loadS,
    });
    const bareGetPerSec = bareLmdbGetRate(serveDir, getKeys, loadS);

    // Query words from the middle of the frequency list: common enough to match, rare enough to rank.
    const queryWords = words.slice(50, 50 + QUERY_COUNT * 2);
    const oneTerm = queryWords.slice(0, QUERY_COUNT);
    const twoTerms = oneTerm.map(
      (word, i) => `${word} ${queryWords[(i * 7 + 3) % queryWords.length]}`,
    );
    const searches: Record<string, { load: Awaited<ReturnType<typeof runLoad>>; bare: number }> =
      {};
    for (const [name, queries] of [
      ['search-1-term', oneTerm],
      ['search-2-terms', twoTerms],
    ] as const) {
      const load = await runLoad({
        baseUrl: serve.url,
        method: 'GET',
        targets: queries.map((q) => ({
          path: `/internal/search/corpus?q=${encodeURIComponent(q)}&limit=10`,
        })),
        connections: LOAD_CONNECTIONS,
        threads: 2,
        durationS: loadS,
      });
      searches[name] = { load, bare: bareFtsQueryRate(corpus, [...queries], loadS) };
    }
    const rss = serve.peakRssBytes();

    const workloads: WorkloadResult[] = [
      {
        group: 'serve',
        name: 'replay',
        description: `serve-node process replaying ${docCount} documents of ${WORDS_PER_DOC} words from ${PARTITIONS} partitions into LMDB + FTS5: startServeNode on an empty data dir until every record is applied (in the bench process, which does nothing else meanwhile)`,
        throughput: { value: replayPerSec, unit: 'docs/s' },
        figures: {
          docs: docCount,
          seconds: replay.seconds,
          rawFtsInsertDocsPerSec: rawPerSec,
        },
        ratios: [ratio('bare FTS5 insert loop', replayPerSec, rawPerSec)],
        peakRssBytes: { 'bench process (serve-node in it)': replay.peakRssBytes },
        targets: [
          {
            name: 'replay / bare FTS5 insert',
            goal: `>= ${REPLAY_RATIO_TARGET}`,
            met: replayPerSec / rawPerSec >= REPLAY_RATIO_TARGET,
          },
        ],
      },
      {
        group: 'serve',
        name: 'get',
        description: `GET /internal/docs over HTTP, ${LOAD_CONNECTIONS} connections, random keys of ${docCount}`,
        throughput: { value: get.requestsPerSec, unit: 'req/s' },
        latency: get.latency,
        figures: { bareLmdbGetsPerSec: bareGetPerSec, errorCount: get.errors },
        ratios: [ratio('bare LMDB get', get.requestsPerSec, bareGetPerSec)],
        peakRssBytes: { 'serve-node': rss },
      },
      ...Object.entries(searches).map(([name, { load, bare }]) => ({
        group: 'serve',
        name,
        description: `top-10 BM25 search with total over ${corpus.length} real documents (man pages, copyright files, READMEs), ${LOAD_CONNECTIONS} connections`,
        throughput: { value: load.requestsPerSec, unit: 'queries/s' },
        latency: load.latency,
        figures: { corpusDocs: corpus.length, bareFtsQueriesPerSec: bare, errorCount: load.errors },
        ratios: [ratio('bare FTS5 top-10 query', load.requestsPerSec, bare)],
        peakRssBytes: { 'serve-node': rss },
      })),
    ];
    return { workloads };
  } finally {
    log?.close();
    await serve?.stop();
    await logNode.stop();
    rmSync(logDir, { recursive: true, force: true });
    rmSync(serveDir, { recursive: true, force: true });
  }
}
