/**
 * `npm run bench -- embedded` (issue 13): `tailbase start` as a user runs it (one process: the
 * gateway on the main thread, the log-node and the serve-node on worker threads, fsync=always), driven like the cluster of the gateway group
 * (api-workloads.ts), each rate beside the bare hono handler of the same run, PostgreSQL's rows
 * beside them when it is installed (peers-group.ts), CPU per PUT for each thread, and replay:
 * a rebuild of the serve-node from the log, beside a bare FTS5 insert loop of the same documents.
 */
import { rmSync } from 'node:fs';
import {
  apiWorkloads,
  measureApi,
  request,
  type ApiRun,
  type ApiTargets,
} from './api-workloads.js';
import { loadCorpus } from './corpus.js';
import { ThreadCpuWindow } from './cpu-share.js';
import { skipRow, TARGETS } from './gateway.js';
import { freePort, spawnLogNode, spawnServer, TAILBASE_BIN, tailbaseBuilt } from './processes.js';
import { makeBenchDir } from './references.js';
import { rawFtsInsertRate } from './serve.js';
import type { BenchOptions, References, WorkloadResult } from './types.js';
import { searchCorpus } from './workload.js';

const PARTITIONS = 8;
/** Issue 13's, with issue 28's GET: one process has no network hop for a key read to pay. */
const EMBEDDED_TARGETS: ApiTargets = { ...TARGETS, getVsHono: 0.8 };
const REPLAY_RATIO_TARGET = 0.8;
const BULK_CHUNK = 500;
/** A rebuild not done by then fails the workload (by default: callers replaying more pass theirs). */
const REPLAY_WAIT_MS_MAX = 120_000;
const REPLAY_POLL_MS = 20;

export async function startEmbedded(
  dir: string,
  options: {
    flags?: string[];
    /** Node's own flags, before the script (`--cpu-prof`, which NODE_OPTIONS refuses). */
    nodeFlags?: string[];
    env?: Record<string, string>;
    readyWaitMsMax?: number;
    /** Another build's `bin/tailbase.js`, to set two builds side by side (replay-rate.ts). */
    bin?: string;
  } = {},
) {
  const port = await freePort();
  return spawnServer({
    args: [
      ...(options.nodeFlags ?? []),
      options.bin ?? TAILBASE_BIN,
      'start',
      '--data',
      dir,
      '--port',
      String(port),
      '--kafka-port',
      'off',
      '--partitions',
      String(PARTITIONS),
      ...(options.flags ?? []),
    ],
    port,
    readyPath: '/readyz',
    env: options.env,
    readyWaitMsMax: options.readyWaitMsMax,
  });
}

export async function runEmbeddedBench(
  options: BenchOptions & { references?: References },
): Promise<{ workloads: WorkloadResult[] }> {
  if (!tailbaseBuilt()) {
    return { workloads: [skipRow('embedded', 'skipped: not built yet (dist/bin/tailbase.js)')] };
  }
  const hono = options.references?.honoReqPerSec?.value ?? 0;
  const quick = options.quick === true;
  const dirs: string[] = [];
  const stops: Array<() => Promise<void>> = [];
  try {
    dirs.push(makeBenchDir('embedded'));
    const tailbase = await startEmbedded(dirs[0]);
    stops.push(tailbase.stop);
    const run = await measureApi(
      tailbase.url,
      () =>
        new ThreadCpuWindow(tailbase.pid, {
          main: 'main thread (HTTP, gateway)',
          busiest: 'busiest worker (log-node, serve-node or a read thread)',
          second: 'next worker',
          rest: 'other threads (write pool, GC)',
        }),
      quick,
    );
    const rss = { 'tailbase start': tailbase.peakRssBytes() };
    const replay = await measureReplay(quick, dirs, stops);
    // A full run only: a second cluster of processes would not fit the quick run's time bound.
    const onKafka = quick ? [] : await measureOnKafkaLog(run, hono, dirs);
    return {
      workloads: [
        ...apiWorkloads(
          'embedded',
          run,
          hono,
          rss,
          EMBEDDED_TARGETS,
          'tailbase start (one process)',
        ),
        ...onKafka,
        {
          group: 'embedded',
          name: 'replay',
          description: `rebuild of the serve-node of tailbase start from its log: ${replay.docs} real documents into LMDB + FTS5, from the rebuild call until a strong read sees the log end`,
          throughput: { value: replay.perSec, unit: 'docs/s' },
          figures: { seconds: replay.seconds, bareFtsInsertPerSec: replay.barePerSec },
          ratios: [
            { reference: 'bare FTS5 insert loop', value: replay.perSec / replay.barePerSec },
          ],
          peakRssBytes: { 'tailbase start': replay.peakRssBytes },
          targets: [
            {
              name: 'replay / bare FTS5 insert',
              goal: `>= ${REPLAY_RATIO_TARGET}`,
              met: replay.perSec / replay.barePerSec >= REPLAY_RATIO_TARGET,
            },
          ],
        },
      ],
    };
  } finally {
    for (const stop of stops) await stop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Issue 25: `tailbase start --log kafka://` (gateway and serve-node in one process) against a
 * log-node process's Kafka listener, the same loads as plain `tailbase start`, each row beside
 * plain's rate of the same run (the target: none slower).
 */
async function measureOnKafkaLog(
  plain: ApiRun,
  hono: number,
  dirs: string[],
): Promise<WorkloadResult[]> {
  dirs.push(makeBenchDir('embedded-log-node'), makeBenchDir('embedded-on-kafka'));
  const kafkaPort = await freePort();
  const log = await spawnLogNode(dirs[dirs.length - 2], PARTITIONS, [
    '--kafka-port',
    String(kafkaPort),
  ]);
  try {
    const tailbase = await startEmbedded(dirs[dirs.length - 1], {
      flags: ['--log', `kafka://127.0.0.1:${kafkaPort}`],
    });
    try {
      const run = await measureApi(
        tailbase.url,
        () =>
          new ThreadCpuWindow(tailbase.pid, {
            main: 'main thread (HTTP, gateway)',
            busiest: 'busiest worker (serve-node or a read thread)',
            second: 'next worker',
            rest: 'other threads (write pool, GC)',
          }),
        false,
      );
      const rss = { 'tailbase start --log kafka://': tailbase.peakRssBytes() };
      const where = 'tailbase start --log kafka:// on a log-node process';
      const rateOf = (name: string) =>
        ({ put: plain.put, get: plain.get, scan: plain.scan, search: plain.search })[name]
          ?.requestsPerSec;
      return apiWorkloads('embedded', run, hono, rss, EMBEDDED_TARGETS, where).map((row) => {
        const before = rateOf(row.name);
        const renamed = { ...row, name: `${row.name} (--log kafka://)` };
        if (before === undefined || row.throughput === undefined) return renamed;
        const ratio = row.throughput.value / before;
        return {
          ...renamed,
          ratios: [...row.ratios, { reference: 'plain tailbase start, same run', value: ratio }],
          targets: [{ name: 'vs plain tailbase start', goal: '>= 1', met: ratio >= 1 }],
        };
      });
    } finally {
      await tailbase.stop();
    }
  } finally {
    await log.stop();
  }
}

/**
 * Rebuilds serve-node 0 of the `tailbase start` at `url` from the log; answers the ms from the
 * rebuild call until a strong read of `collection` sees the log end. The load's apply and the
 * rebuild are each given up after `waitMsMax`.
 */
export async function rebuildServeNode(
  url: string,
  collection: string,
  waitMsMax = REPLAY_WAIT_MS_MAX,
): Promise<number> {
  const strong = `${url}/v1/collections/${collection}/docs?limit=1&consistency=strong&wait_ms=30000`;
  // The load may still be applying (10^5 documents with the lists on a busy machine): a 504 of a
  // strong read only says it has not caught up yet.
  await strongUntil200(strong, Date.now(), waitMsMax, 'the load was never applied');
  const startedMs = Date.now();
  await request(`${url}/v1/admin/serve-nodes/0/rebuild`, { method: 'POST' });
  // The rebuild swaps the stores a moment after it is asked for; only then does a strong read
  // wait for the replay.
  for (;;) {
    const status = await request(`${url}/v1/admin/serve-nodes/0/status`);
    if ((status.body.lastRebuild?.atMs ?? 0) >= startedMs) break;
    if (Date.now() - startedMs > waitMsMax) throw new Error('the rebuild never started');
    await new Promise((resolve) => setTimeout(resolve, REPLAY_POLL_MS));
  }
  await strongUntil200(strong, startedMs, waitMsMax, 'the rebuild did not finish');
  return Date.now() - startedMs;
}

/** Strong reads one after another until one answers 200, at most `waitMsMax` from `fromMs`. */
async function strongUntil200(
  strong: string,
  fromMs: number,
  waitMsMax: number,
  failure: string,
): Promise<void> {
  while ((await fetch(strong, { signal: AbortSignal.timeout(waitMsMax) })).status !== 200) {
    if (Date.now() - fromMs > waitMsMax) throw new Error(failure);
  }
}

/** A fresh `tailbase start` holding the corpus alone: its serve-node rebuilt, timed. */
async function measureReplay(quick: boolean, dirs: string[], stops: Array<() => Promise<void>>) {
  const docs = searchCorpus((await loadCorpus()).docs, quick);
  dirs.push(makeBenchDir('embedded-replay'));
  const tailbase = await startEmbedded(dirs[dirs.length - 1]);
  stops.push(tailbase.stop);
  const url = tailbase.url;
  for (let i = 0; i < docs.length; i += BULK_CHUNK) {
    const chunk = docs.slice(i, i + BULK_CHUNK).map((d) => ({ key: d.key, value: d.value }));
    await request(`${url}/v1/collections/corpus/docs`, {
      method: 'POST',
      body: JSON.stringify(chunk),
    });
  }
  const seconds = (await rebuildServeNode(url, 'corpus')) / 1000;
  return {
    docs: docs.length,
    seconds,
    perSec: docs.length / seconds,
    barePerSec: rawFtsInsertRate(docs),
    peakRssBytes: tailbase.peakRssBytes(),
  };
}
