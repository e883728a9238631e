/**
 * `node dist/bench/load-reads.js [--docs 1e5] [--rounds 1] [--build 'a/dist/bin/tailbase.js
 * --flag value' ...]`: where a key read spends its time while `tailbase start` takes a bulk load (issue
 * 28 item 3). Each round loads the scale corpus into a fresh process of each build in turn, as the
 * scale group does (bulks of 5,000 NDJSON lines, 4 in flight), while one client alternates a GET
 * of a key of the first bulk and a GET of `/healthz` with 10 ms pauses: `/healthz` is answered on
 * the HTTP thread alone, a key read also crosses to a read thread, so the two apart say which
 * thread holds a slow read (the client reads on a thread of its own, read-probe.ts). Beside them:
 * the loader's event-loop delay, and each busy thread of the server by the scheduler's
 * accounting over the load (on a CPU, waiting for one).
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Command } from 'commander';
import { request } from './api-workloads.js';
import { startEmbedded } from './embedded.js';
import { LatencyHistogram } from './latency-histogram.js';
import { TAILBASE_BIN } from './processes.js';
import { startReadProbe, type ReadProbe } from './read-probe.js';
import { makeBenchDir, removeBenchDirs } from './references.js';
import { writeScaleCorpus } from './scale-corpus.js';
import {
  COLLECTION,
  firstBulkDocPaths,
  postCorpus,
  SETTINGS,
  strongSearch,
} from './scale-tailbase.js';
import { ThreadTimesWindow } from './thread-sched.js';

const PROBE_PAUSE_MS = 10;
const PROBE_READS_MAX = 100_000;
const IDLE_READS = 500;
/** Threads listed per run, the busiest first. */
const THREADS_SHOWN = 6;

const docPaths = firstBulkDocPaths();

/** A key read and a /healthz a round, on the probe's own thread. */
function probe(url: string, roundsMax: number) {
  return startReadProbe({
    url,
    groups: [docPaths, ['/healthz']],
    pauseMs: PROBE_PAUSE_MS,
    roundsMax,
  });
}

function threadsLine(pid: number, window: ThreadTimesWindow): string {
  return window
    .threads()
    .slice(0, THREADS_SHOWN)
    .map(
      (r) =>
        `${r.tid === pid ? 'main' : r.tid} run ${r.runMs.toFixed(0)} queued ${r.queuedMs.toFixed(0)} ms`,
    )
    .join('; ');
}

const ms = (h: LatencyHistogram, q: number) => h.quantileMs(q).toFixed(1);

async function runOnce(build: string, corpus: string, docs: number): Promise<void> {
  const [bin, ...flags] = build.split(' ').filter((word) => word !== '');
  const dir = makeBenchDir('load-reads');
  const server = await startEmbedded(dir, { bin, flags });
  const clientDelay = monitorEventLoopDelay({ resolution: 10 });
  try {
    await request(`${server.url}/v1/collections/${COLLECTION}/settings`, {
      method: 'PUT',
      body: JSON.stringify(SETTINGS),
    });
    let during: ReadProbe | null = null;
    const threads = new ThreadTimesWindow(server.pid);
    const started = performance.now();
    clientDelay.enable();
    await postCorpus(server.url, corpus, () => {
      during = probe(server.url, PROBE_READS_MAX);
    });
    await strongSearch(server.url, docs);
    const searchableS = (performance.now() - started) / 1000;
    if (during === null) throw new Error('no bulk request was acknowledged');
    const [loadDoc, loadHealth] = await (during as ReadProbe).stop();
    clientDelay.disable();
    const threadsOverLoad = threadsLine(server.pid, threads);
    const [idleDoc, idleHealth] = await probe(server.url, IDLE_READS).done;
    const load = { doc: loadDoc, health: loadHealth };
    const idle = { doc: idleDoc, health: idleHealth };
    const idleP99 = idle.doc.quantileMs(0.99);
    console.log(
      `${build}: searchable ${(docs / searchableS).toFixed(0)} docs/s; GET p50/p99/max during ${ms(load.doc, 0.5)}/${ms(load.doc, 0.99)}/${ms(load.doc, 1)} ms, idle p99 ${idleP99.toFixed(1)} (${(load.doc.quantileMs(0.99) / idleP99).toFixed(1)}x); /healthz p50/p99/max ${ms(load.health, 0.5)}/${ms(load.health, 0.99)}/${ms(load.health, 1)}, idle p99 ${ms(idle.health, 0.99)}; loader's loop delay p99/max ${(clientDelay.percentile(99) / 1e6).toFixed(1)}/${(clientDelay.max / 1e6).toFixed(1)} ms`,
    );
    console.log(`  threads over the load: ${threadsOverLoad}`);
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const command = new Command()
    .option('--docs <n>', 'scale corpus documents to load', '1e5')
    .option('--rounds <n>', 'loads of each build', '1')
    .option(
      '--build <bin and flags...>',
      "each build's bin/tailbase.js and flags of tailbase start, in one argument, alternated",
      [TAILBASE_BIN],
    )
    .parse(process.argv);
  const o = command.opts<{ docs: string; rounds: string; build: string[] }>();
  const docs = Number(o.docs);
  const corpusDir = makeBenchDir('load-reads-corpus');
  try {
    const corpus = join(corpusDir, 'corpus.ndjson');
    await writeScaleCorpus(corpus, docs);
    for (let round = 0; round < Number(o.rounds); round++) {
      for (const build of o.build) await runOnce(build, corpus, docs);
    }
  } finally {
    rmSync(corpusDir, { recursive: true, force: true });
    removeBenchDirs();
  }
}

await main();
