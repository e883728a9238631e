/**
 * PostgreSQL as a peer: upsert and select of a JSON document by primary key, the same work as
 * the gateway's PUT and GET (same 2000 keys, same document, 64 clients), with fsync=on and
 * synchronous_commit=on so an insert is acknowledged after its WAL is on disk. Driven by pgbench
 * (a native client, like wrk for tailbase); p50/p99 come from its per-transaction log.
 */
import { spawnSync } from 'node:child_process';
import { chownSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { loadCorpus } from './corpus.js';
import {
  CONNECTIONS,
  DOCUMENT,
  KEYS,
  SEARCH_TERMS_MAX,
  searchCorpus,
  searchTerms,
} from './workload.js';
import { withFields, type FieldDoc } from './filter-fields.js';
import { LatencyHistogram } from './latency-histogram.js';
import { freePort, spawnServer } from './processes.js';
import { makeBenchDir } from './references.js';
import { runTool } from './run-tool.js';
import type { BenchOptions, LatencySummary, WorkloadResult } from './types.js';

const THREADS = 2;
const SETUP_MS_MAX = 30_000;
/** pgbench's own -T bound, plus this much for connecting and writing its log. */
const RUN_SLACK_MS = 20_000;
const OUTPUT_TAIL_BYTES_MAX = 4096;

const SCHEMA = `
CREATE TABLE kv (k text PRIMARY KEY, v jsonb NOT NULL);
INSERT INTO kv SELECT 'key-' || lpad(i::text, 6, '0'), '${DOCUMENT}'::jsonb
  FROM generate_series(0, ${KEYS - 1}) AS i;
`;

const KEY_EXPRESSION = `'key-' || lpad(:k::text, 6, '0')`;

export interface PgRun {
  name: string;
  description: string;
  script: string;
  unit: string;
  /** pgbench clients (default CONNECTIONS). */
  clients?: number;
}

const RUNS: PgRun[] = [
  {
    name: 'postgres INSERT',
    description: `INSERT ... ON CONFLICT DO UPDATE by primary key (upsert, as PUT), ${KEYS} keys, ${CONNECTIONS} clients, fsync=on, synchronous_commit=on`,
    script: `\\set k random(0, ${KEYS - 1})\nINSERT INTO kv VALUES (${KEY_EXPRESSION}, '${DOCUMENT}') ON CONFLICT (k) DO UPDATE SET v = excluded.v;\n`,
    unit: 'writes/s',
  },
  {
    name: 'postgres SELECT',
    description: `SELECT by primary key, ${KEYS} keys, ${CONNECTIONS} clients`,
    script: `\\set k random(0, ${KEYS - 1})\nSELECT v FROM kv WHERE k = ${KEY_EXPRESSION};\n`,
    unit: 'req/s',
  },
];

/** The statements that load a database, the files they read, and the pgbench runs against it. */
export interface Prepared {
  setup: string[];
  files: string[];
  runs: PgRun[];
}

/** The search row doing tailbase's whole work: top 10, total count, highlights. */
export const POSTGRES_SEARCH_SAME_WORK = 'postgres search (count + headline)';

/** tsvector holds at most 1 MiB; longer documents are indexed up to this many characters. */
const SEARCH_TEXT_CHARS_MAX = 256 * 1024;

/** The search corpus with the filters group's fields (filter-fields.ts), each B-tree indexed. */
const SEARCH_SCHEMA = `
CREATE TABLE docs (key text PRIMARY KEY, title text NOT NULL, body text NOT NULL,
  year int NOT NULL, genre text NOT NULL,
  tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', title || ' ' || body)) STORED);
CREATE INDEX docs_tsv ON docs USING GIN (tsv);
CREATE INDEX docs_year ON docs (year);
CREATE INDEX docs_genre ON docs (genre);
CREATE TABLE terms (id int PRIMARY KEY, term text NOT NULL);
`;

export const csvField = (text: string | number) =>
  `"${String(text)
    .replace(/\u0000/g, '')
    .replace(/"/g, '""')}"`;

/**
 * The statements that load `docs` into the search table (a generated tsvector and a GIN index,
 * the way a PostgreSQL user would add full-text search) and `terms` into the terms table, through
 * a CSV file written into `dir`.
 */
export function searchTableSetup(dir: string, docs: readonly FieldDoc[], terms: string[]) {
  const csv = join(dir, 'corpus.csv');
  writeFileSync(
    csv,
    docs
      .map((doc) =>
        [
          doc.key,
          doc.value.title,
          doc.value.body.slice(0, SEARCH_TEXT_CHARS_MAX),
          doc.value.year,
          doc.value.genre,
        ]
          .map(csvField)
          .join(','),
      )
      .join('\n'),
  );
  const values = terms.map((term, i) => `(${i + 1}, '${term}')`).join(',');
  return {
    setup: [
      SEARCH_SCHEMA,
      `\\copy docs (key, title, body, year, genre) FROM '${csv}' WITH (FORMAT csv)`,
      `INSERT INTO terms VALUES ${values}`,
    ],
    files: [csv],
  };
}

/** `\set t` to a random term of the terms table, and the tsquery of it. */
export const termScript = (terms: number) => `\\set t random(1, ${terms})\n`;
export const TERM_QUERY = `plainto_tsquery('simple', (SELECT term FROM terms WHERE id = :t))`;

/** The peers group's search runs over the search corpus: top 10 by ts_rank. */
async function searchRun(dir: string, quick: boolean): Promise<Prepared> {
  const docs = withFields(searchCorpus((await loadCorpus()).docs, quick), 1);
  const terms = searchTerms(docs, SEARCH_TERMS_MAX);
  const table = searchTableSetup(dir, docs, terms);
  return {
    setup: [SCHEMA, ...table.setup],
    files: table.files,
    runs: [
      ...RUNS,
      {
        name: 'postgres search',
        description: `tsvector + GIN, top 10 by ts_rank over ${docs.length} real documents, one term, ${CONNECTIONS} clients`,
        script:
          termScript(terms.length) +
          `SELECT key FROM docs, ${TERM_QUERY} q ` +
          `WHERE tsv @@ q ORDER BY ts_rank(tsv, q) DESC LIMIT 10;\n`,
        unit: 'queries/s',
      },
      {
        // What tailbase's search answers: the top 10 with their documents, the total count of
        // matches, and each hit's fields with the matches marked.
        name: POSTGRES_SEARCH_SAME_WORK,
        description: `as postgres search, plus count(*) over every match and ts_headline of title and body for the 10 hits`,
        script:
          termScript(terms.length) +
          `WITH q AS (SELECT ${TERM_QUERY} q), ` +
          `hits AS (SELECT key, title, body, ts_rank(tsv, q.q) AS rank, count(*) OVER () AS total ` +
          `FROM docs, q WHERE tsv @@ q.q ORDER BY rank DESC LIMIT 10) ` +
          `SELECT key, total, ts_headline('simple', title, q.q), ts_headline('simple', body, q.q) ` +
          `FROM hits, q ORDER BY rank DESC;\n`,
        unit: 'queries/s',
      },
    ],
  };
}

/** Postgres refuses to run as root: as root, run it as the `postgres` user the package creates. */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' });
  const uid = id('-u');
  const gid = id('-g');
  if (uid.status !== 0 || gid.status !== 0) {
    throw new Error('running as root and there is no `postgres` user to run the server as');
  }
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/** A PostgreSQL tool (initdb, psql, pgbench) as the postgres role: the tail of its output. */
function pgTool(
  binary: string,
  args: string[],
  timeoutMs: number,
  user?: { uid: number; gid: number },
  cwd?: string,
): Promise<string> {
  return runTool(binary, args, {
    timeoutMs,
    user,
    cwd,
    outputBytesMax: OUTPUT_TAIL_BYTES_MAX,
    env: { ...process.env, PGUSER: 'postgres', PGDATABASE: 'postgres' },
  });
}

/** Per-transaction log lines: `client transaction latency_us script epoch_s epoch_us`. */
function latencyFromLogs(dir: string, prefix: string): LatencySummary {
  const histogram = new LatencyHistogram();
  for (const file of readdirSync(dir).filter((f) => f.startsWith(`${prefix}.`))) {
    for (const line of readFileSync(join(dir, file), 'utf8').split('\n')) {
      const fields = line.split(' ');
      if (fields.length >= 6) histogram.recordMs(Number(fields[2]) / 1000);
    }
  }
  return histogram.summary();
}

function parseSummary(output: string): { tps: number; transactions: number; failed: number } {
  const tps = /^tps = ([\d.]+)/m.exec(output);
  const transactions = /number of transactions actually processed: (\d+)/.exec(output);
  if (tps === null || transactions === null) {
    throw new Error(`pgbench printed no result: ${output.slice(-500)}`);
  }
  const failed = /number of failed transactions: (\d+)/.exec(output);
  return {
    tps: Number(tps[1]),
    transactions: Number(transactions[1]),
    failed: failed ? Number(failed[1]) : 0,
  };
}

export function runPostgresBench(
  options: BenchOptions,
  postgresBinary: string,
): Promise<WorkloadResult[]> {
  return runPostgres(postgresBinary, {
    group: 'peers',
    quick: options.quick,
    setupMsMax: SETUP_MS_MAX,
    prepare: (dir) => searchRun(dir, options.quick),
  });
}

/** A running PostgreSQL server of withPostgres, and the tools against it. */
export interface PgServer {
  /** The directory its data, sockets and the files its setup reads are in. */
  dir: string;
  dataDir: string;
  pid: number;
  /** Peak RSS of the postmaster since start or the last reset. */
  peakRssBytes(): number;
  resetPeakRss(): void;
  /** psql with `-c` of each statement (each its own transaction), ON_ERROR_STOP; its output. */
  psql(statements: string[], timeoutMs: number, flags?: string[]): Promise<string>;
  /**
   * pgbench of `run` at `clients`, for `durationS` seconds, logging into `logDir`; `slackMs`
   * (default RUN_SLACK_MS) past the duration for connecting, the last transactions and the log.
   */
  pgbench(
    run: PgRun,
    options: { clients: number; durationS: number; logDir: string; slackMs?: number },
  ): Promise<{ tps: number; transactions: number; failed: number; latency: LatencySummary }>;
  /** Files the server reads (a COPY's input) made readable by the user it runs as. */
  share(files: string[]): void;
}

/**
 * A PostgreSQL server on loopback with a temp data dir, fsync=on and synchronous_commit=on, for
 * the time of `work`; stopped and its directory removed after.
 */
export async function withPostgres<T>(
  postgresBinary: string,
  work: (server: PgServer) => Promise<T>,
  connectionsMax = CONNECTIONS + 16,
): Promise<T> {
  const bin = dirname(postgresBinary);
  const user = serverUser();
  const dir = makeBenchDir('postgres');
  const data = join(dir, 'data');
  if (user) chownSync(dir, user.uid, user.gid);
  try {
    await pgTool(
      join(bin, 'initdb'),
      ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8'],
      SETUP_MS_MAX,
      user,
      dir,
    );
    const port = await freePort();
    const server = await spawnServer({
      command: postgresBinary,
      args: [
        '-D',
        data,
        '-p',
        String(port),
        '-k',
        dir,
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        'fsync=on',
        '-c',
        'synchronous_commit=on',
        '-c',
        'full_page_writes=on',
        '-c',
        `max_connections=${connectionsMax}`,
      ],
      port,
      uid: user?.uid,
      gid: user?.gid,
      ready: () =>
        spawnSync(join(bin, 'pg_isready'), ['-q', '-h', '127.0.0.1', '-p', String(port)]).status ===
        0,
    });
    const connection = ['-h', '127.0.0.1', '-p', String(port)];
    try {
      return await work({
        dir,
        dataDir: data,
        pid: server.pid,
        peakRssBytes: server.peakRssBytes,
        resetPeakRss: server.resetPeakRss,
        share: (files) => {
          if (user) for (const file of files) chownSync(file, user.uid, user.gid);
        },
        psql: (statements, timeoutMs, flags = []) =>
          pgTool(
            join(bin, 'psql'),
            [
              ...connection,
              '-v',
              'ON_ERROR_STOP=1',
              '-q',
              ...flags,
              ...statements.flatMap((statement) => ['-c', statement]),
            ],
            timeoutMs,
          ),
        pgbench: async (run, { clients, durationS, logDir, slackMs = RUN_SLACK_MS }) => {
          const script = join(logDir, 'script.sql');
          mkdirSync(logDir, { recursive: true });
          writeFileSync(script, run.script);
          const output = await pgTool(
            join(bin, 'pgbench'),
            [
              ...connection,
              '-n',
              '-M',
              'prepared',
              '-c',
              String(clients),
              '-j',
              String(Math.min(THREADS, clients)),
              '-T',
              String(durationS),
              '-f',
              script,
              '--log',
              `--log-prefix=${join(logDir, 'tx')}`,
            ],
            durationS * 1000 + slackMs,
          );
          return { ...parseSummary(output), latency: latencyFromLogs(logDir, 'tx') };
        },
      });
    } finally {
      await server.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * PostgreSQL (withPostgres): `prepare` writes what its setup reads into `dir` and names the
 * statements and the pgbench runs, each run's rows then in `group`.
 */
export function runPostgres(
  postgresBinary: string,
  options: {
    group: string;
    quick: boolean;
    setupMsMax: number;
    prepare: (dir: string) => Promise<Prepared>;
  },
): Promise<WorkloadResult[]> {
  return withPostgres(postgresBinary, async (server) => {
    const prepared = await options.prepare(server.dir);
    server.share(prepared.files);
    // VACUUM cannot run in the transaction one -c wraps its statements in.
    await server.psql([...prepared.setup, 'VACUUM ANALYZE'], options.setupMsMax);
    const durationS = options.quick ? 1 : 5;
    const results: WorkloadResult[] = [];
    for (const [index, run] of prepared.runs.entries()) {
      server.resetPeakRss();
      const summary = await server.pgbench(run, {
        clients: run.clients ?? CONNECTIONS,
        durationS,
        logDir: join(server.dir, `logs-${index}`),
      });
      results.push({
        group: options.group,
        name: run.name,
        description: run.description,
        throughput: { value: summary.tps, unit: run.unit },
        latency: summary.latency,
        figures: {
          clients: run.clients ?? CONNECTIONS,
          transactions: summary.transactions,
          errorCount: summary.failed,
          client: 'pgbench',
        },
        ratios: [],
        peakRssBytes: { 'postgres (postmaster)': server.peakRssBytes() },
      });
    }
    return results;
  });
}
