/**
 * The scale group's PostgreSQL side at one size, doing what its users would for the same work: a
 * table with the documents' fields, a generated tsvector of title and body with a GIN index and a
 * B-tree on the filtered keyword, loaded with COPY (the indexes in place, as tailbase indexes
 * while it loads); then GET by primary key and the same searches as tailbase's (top 10 by
 * ts_rank and the count of every match) from pgbench at 1 and 16 clients.
 */
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { join } from 'node:path';
import { csvField, termScript, TERM_QUERY, withPostgres, type PgRun } from './peer-postgres.js';
import { COMMON_TERM, FILTER_CATEGORY, midFrequencyTerms, scaleDoc } from './scale-corpus.js';
import type { QueryFigures, QueryName } from './scale-tailbase.js';
import { diskUsage } from './disk-usage.js';

/** Loading 10^7 documents with a GIN index takes PostgreSQL most of an hour. */
const LOAD_MS_PER_DOC_MAX = 2;
const LOAD_MS_MIN = 120_000;
const QUERY_MS_MAX = 60_000;
/**
 * pgbench waits for every transaction in flight at the end of its run: 16 clients each in a
 * search of the commonest word took PostgreSQL past 25 s at 10^6 documents.
 */
const PGBENCH_SLACK_MS = 600_000;

const SCHEMA = `
CREATE TABLE docs (key text PRIMARY KEY, title text NOT NULL, body text NOT NULL,
  year int NOT NULL, price numeric NOT NULL, category text NOT NULL, tag text NOT NULL,
  tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', title || ' ' || body)) STORED);
CREATE INDEX docs_tsv ON docs USING GIN (tsv);
CREATE INDEX docs_category ON docs (category);
CREATE TABLE terms (id int PRIMARY KEY, term text NOT NULL);
`;

export interface PostgresScaleFigures {
  documents: number;
  /** COPY done: committed, and so searchable. */
  loadAckPerSec: number;
  /** COPY and then VACUUM ANALYZE (the GIN pending list merged, statistics taken). */
  loadSettledPerSec: number;
  /** Tables and indexes (pg_total_relation_size of docs). */
  tableBytes: number;
  /** The whole data directory, WAL included. */
  dataDirBytes: number;
  queries: Record<QueryName, QueryFigures>;
}

async function writeCsv(file: string, documents: number): Promise<void> {
  const out = createWriteStream(file);
  for (let i = 0; i < documents; i++) {
    const { key, value } = scaleDoc(i);
    const row = [key, value.title, value.body, value.year, value.price, value.category, value.tag];
    if (!out.write(row.map(csvField).join(',') + '\n')) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

const topTen = (where: string) =>
  `SELECT key, title, body, year, price, category, tag, count(*) OVER () AS total ` +
  `FROM docs, ${TERM_QUERY} q WHERE tsv @@ q${where} ORDER BY ts_rank(tsv, q) DESC LIMIT 10;\n`;

function runs(documents: number, terms: number): Record<QueryName, PgRun> {
  const run = (name: string, script: string): PgRun => ({
    name,
    description: '',
    script,
    unit: 'queries/s',
  });
  return {
    get: run(
      'get',
      `\\set i random(0, ${documents - 1})\n` +
        `SELECT * FROM docs WHERE key = 'doc-' || lpad(:i::text, 8, '0');\n`,
    ),
    'search mid': run('search mid', termScript(terms) + topTen('')),
    // Term 0 of the terms table is the common word.
    'search common': run('search common', `\\set t 0\n` + topTen('')),
    'search filtered': run(
      'search filtered',
      termScript(terms) + topTen(` AND category = '${FILTER_CATEGORY}'`),
    ),
  };
}

export function runPostgresAtSize(
  binary: string,
  documents: number,
  quick: boolean,
): Promise<PostgresScaleFigures> {
  const loadMsMax = Math.max(LOAD_MS_MIN, documents * LOAD_MS_PER_DOC_MAX);
  return withPostgres(
    binary,
    async (server) => {
      const csv = join(server.dir, 'scale.csv');
      await writeCsv(csv, documents);
      server.share([csv]);
      const mid = midFrequencyTerms();
      const values = [COMMON_TERM, ...mid].map((term, i) => `(${i}, '${term}')`).join(',');
      await server.psql([SCHEMA, `INSERT INTO terms VALUES ${values}`], QUERY_MS_MAX);
      const started = performance.now();
      await server.psql(
        [
          `\\copy docs (key, title, body, year, price, category, tag) FROM '${csv}' WITH (FORMAT csv)`,
        ],
        loadMsMax,
      );
      const ackS = (performance.now() - started) / 1000;
      await server.psql(['VACUUM ANALYZE docs'], loadMsMax);
      const settledS = (performance.now() - started) / 1000;
      const size = await server.psql([`SELECT pg_total_relation_size('docs')`], QUERY_MS_MAX, [
        '-t',
        '-A',
      ]);
      const durationS = quick ? 1 : 5;
      const queries = {} as Record<QueryName, QueryFigures>;
      for (const [name, run] of Object.entries(runs(documents, mid.length)) as Array<
        [QueryName, PgRun]
      >) {
        const logDir = (clients: number) =>
          join(server.dir, `logs-${name.replace(' ', '-')}-${clients}`);
        const bench = (clients: number) =>
          server.pgbench(run, {
            clients,
            durationS,
            logDir: logDir(clients),
            slackMs: PGBENCH_SLACK_MS,
          });
        const single = await bench(1);
        const sixteen = await bench(16);
        queries[name] = {
          single: { ...single.latency, perSec: single.tps },
          sixteenPerSec: sixteen.tps,
          errors: single.failed + sixteen.failed,
          matches: 0,
        };
      }
      return {
        documents,
        loadAckPerSec: documents / ackS,
        loadSettledPerSec: documents / settledS,
        tableBytes: Number(size.trim()),
        dataDirBytes: diskUsage(server.dataDir).totalBytes,
        queries,
      };
    },
    // pgbench's 16 clients and psql.
    32,
  );
}
