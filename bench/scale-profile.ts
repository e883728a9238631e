/**
 * Where the apply path's time goes as the index grows (issue 26 item 4, measured, not fixed):
 * `node dist/bench/scale-profile.js --documents 1e6` loads the scale corpus into `tailbase start`
 * run with `--cpu-prof` (every thread writes a V8 profile as it exits), and while it loads samples
 * every few seconds the documents applied and the FTS5 segments of the collection's tables (read
 * from the store's `_idx` shadow table by a reader of its own); after a clean stop it prints the
 * apply rate by window, the segments, and the serve thread's heaviest functions by self time.
 */
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Command } from 'commander';
import { request } from './api-workloads.js';
import { monotonicUs, printSelfTimes, selfTimes, serveProfile } from './cpu-profile.js';
import { startEmbedded } from './embedded.js';
import { makeBenchDir, removeBenchDirs } from './references.js';
import { writeScaleCorpus } from './scale-corpus.js';
import { COLLECTION, postCorpus, SETTINGS, strongSearch } from './scale-tailbase.js';

const SAMPLE_MS = 5_000;
/** A sample loop cannot outlive this many samples (10^7 documents at ~1,000 docs/s). */
const SAMPLES_MAX = 3_000;

interface Sample {
  seconds: number;
  applied: number;
  segments: number;
}

async function appliedDocuments(url: string): Promise<number> {
  const { body } = await request(`${url}/v1/status`);
  const partitions = body.partitions as Array<{
    topic: string;
    replicas: Array<{ applied: number }>;
  }>;
  return partitions
    .filter((p) => p.topic === COLLECTION)
    .reduce((sum, p) => sum + (p.replicas[0]?.applied ?? 0), 0);
}

/** FTS5 segments of every table of the store (distinct segment ids of the `_idx` tables). */
function ftsSegments(dataDir: string): number {
  const serve = join(dataDir, 'serve');
  let segments = 0;
  for (const stores of readdirSync(serve)) {
    let db: Database.Database;
    try {
      db = new Database(join(serve, stores, 'search.sqlite'), {
        readonly: true,
        fileMustExist: true,
      });
    } catch {
      continue;
    }
    try {
      const tables = db
        .prepare(
          `SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '%\\_idx' ESCAPE '\\'`,
        )
        .pluck()
        .all() as string[];
      for (const table of tables) {
        segments += db
          .prepare(`SELECT count(DISTINCT segid) FROM "${table}"`)
          .pluck()
          .get() as number;
      }
    } finally {
      db.close();
    }
  }
  return segments;
}

async function main(): Promise<void> {
  const opts = new Command()
    .option('--documents <n>', 'documents to load', '1e5')
    .parse(process.argv)
    .opts<{ documents: string }>();
  const documents = Number(opts.documents);
  const corpusDir = makeBenchDir('scale-profile-corpus');
  const dataDir = makeBenchDir('scale-profile-data');
  const profileDir = makeBenchDir('scale-profile-cpu');
  try {
    const corpusFile = join(corpusDir, 'corpus.ndjson');
    await writeScaleCorpus(corpusFile, documents);
    const server = await startEmbedded(dataDir, {
      nodeFlags: ['--cpu-prof', `--cpu-prof-dir=${profileDir}`],
    });
    const samples: Sample[] = [];
    /** The load, from the first bulk request until a strong search answers. */
    const loadUs = [0, 0];
    try {
      await request(`${server.url}/v1/collections/${COLLECTION}/settings`, {
        method: 'PUT',
        body: JSON.stringify(SETTINGS),
      });
      const started = performance.now();
      loadUs[0] = monotonicUs();
      let loaded = false;
      const sampling = (async () => {
        for (let i = 0; i < SAMPLES_MAX; i++) {
          const applied = await appliedDocuments(server.url);
          samples.push({
            seconds: (performance.now() - started) / 1000,
            applied,
            segments: ftsSegments(dataDir),
          });
          if (loaded && applied >= documents) return;
          await new Promise((resolve) => setTimeout(resolve, SAMPLE_MS));
        }
      })();
      await postCorpus(server.url, corpusFile, () => {});
      await strongSearch(server.url, documents);
      loadUs[1] = monotonicUs();
      loaded = true;
      await sampling;
    } finally {
      await server.stop();
    }
    console.log(
      `${documents} documents; window: seconds, applied, docs/s in the window, FTS5 segments`,
    );
    samples.forEach((s, i) => {
      const before = samples[i - 1] ?? { seconds: 0, applied: 0 };
      const rate = (s.applied - before.applied) / (s.seconds - before.seconds);
      console.log(
        `${s.seconds.toFixed(0).padStart(6)} s ${String(s.applied).padStart(9)} ${rate.toFixed(0).padStart(7)} docs/s ${String(s.segments).padStart(5)} segments`,
      );
    });
    const profile = serveProfile(profileDir);
    if (profile === null) {
      console.log(`no profile of the serve thread in ${profileDir}`);
      return;
    }
    const [from, to] = loadUs;
    const quarter = (to - from) / 4;
    printSelfTimes('serve thread, the whole load', selfTimes(profile, from, to));
    printSelfTimes(
      'serve thread, first quarter of the load',
      selfTimes(profile, from, from + quarter),
    );
    printSelfTimes('serve thread, last quarter of the load', selfTimes(profile, to - quarter, to));
  } finally {
    for (const dir of [corpusDir, dataDir, profileDir])
      rmSync(dir, { recursive: true, force: true });
    removeBenchDirs();
  }
}

await main();
