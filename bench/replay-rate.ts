/**
 * The serve-node's replay rate alone, repeatable, for finding what slowed it (issue 26 item 4):
 * `node dist/bench/replay-rate.js [--docs N | --scale N] [--rounds R] [--bin other/dist/bin/tailbase.js]
 * [--cpu-prof] [-- tailbase start flags]` loads the first N corpus documents (or, with --scale,
 * the scale group's first N documents under its settings, field indexes included) into a fresh
 * `tailbase start`, rebuilds its serve-node R times (as the embedded group's replay does), and
 * prints each round's docs/s beside a bare FTS5 insert loop of the same documents timed right
 * after it, so a loaded machine slows both. Several `--bin` set builds side by side, each round
 * alternating between them. Each round also prints how the serve thread spent the rebuild's wall
 * time (on a CPU, waiting for one, blocked: thread-sched.ts), and the profile covers the rebuilds
 * only, not the bare loops timed between them.
 */
import { rmSync } from 'node:fs';
import { Command } from 'commander';
import { request } from './api-workloads.js';
import { loadCorpus } from './corpus.js';
import { monotonicUs, printSelfTimes, selfTimesOver, serveProfile } from './cpu-profile.js';
import { rebuildServeNode, startEmbedded } from './embedded.js';
import { TAILBASE_BIN } from './processes.js';
import { makeBenchDir, removeBenchDirs } from './references.js';
import { scaleDoc } from './scale-corpus.js';
import {
  COLLECTION as SCALE_COLLECTION,
  SETTINGS as SCALE_SETTINGS,
  waitMsMax,
} from './scale-tailbase.js';
import { rawFtsInsertRate } from './serve.js';
import { formatThreadTimes, ThreadTimesWindow } from './thread-sched.js';

const BULK_CHUNK = 500;

/** A load or a rebuild slower than this (100 documents a second) fails the run. */
const REPLAY_MS_PER_DOC_MAX = 10;

/** What a round replays: the corpus, or the scale group's documents with its settings. */
interface ReplayInput {
  collection: string;
  settings: object | null;
  docs: ReadonlyArray<{ key: string; value: { title: string; body: string } }>;
}

interface Build {
  bin: string;
  server: Awaited<ReturnType<typeof startEmbedded>>;
  dataDir: string;
  profileDir: string | null;
  /** The rebuilds' windows on the profiles' clock, µs. */
  windowsUs: Array<[number, number]>;
}

async function startBuild(
  bin: string,
  flags: string[],
  cpuProf: boolean,
  { collection, settings, docs }: ReplayInput,
): Promise<Build> {
  const dataDir = makeBenchDir('replay-rate');
  const profileDir = cpuProf ? makeBenchDir('replay-rate-cpu') : null;
  const server = await startEmbedded(dataDir, {
    bin,
    flags,
    nodeFlags: profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [],
  });
  if (settings !== null) {
    await request(`${server.url}/v1/collections/${collection}/settings`, {
      method: 'PUT',
      body: JSON.stringify(settings),
    });
  }
  for (let i = 0; i < docs.length; i += BULK_CHUNK) {
    const chunk = docs.slice(i, i + BULK_CHUNK).map((d) => ({ key: d.key, value: d.value }));
    await request(`${server.url}/v1/collections/${collection}/docs`, {
      method: 'POST',
      body: JSON.stringify(chunk),
    });
  }
  return { bin, server, dataDir, profileDir, windowsUs: [] };
}

async function main(): Promise<void> {
  const opts = new Command()
    .option('--docs <n>', 'corpus documents to load (the corpus has ~3,500)', '100000')
    .option('--rounds <n>', 'rebuilds of each build', '3')
    .option('--bin <path...>', 'bin/tailbase.js of each build to compare', [TAILBASE_BIN])
    .option('--scale <n>', "the scale group's first N documents and settings, not the corpus")
    .option('--cpu-prof', 'profile the serve thread over the rebuilds', false)
    .argument('[flags...]', 'flags for tailbase start')
    .parse(process.argv);
  const o = opts.opts<{
    docs: string;
    rounds: string;
    bin: string[];
    cpuProf: boolean;
    scale?: string;
  }>();
  const input: ReplayInput =
    o.scale === undefined
      ? {
          collection: 'corpus',
          settings: null,
          docs: (await loadCorpus()).docs.slice(0, Number(o.docs)),
        }
      : {
          collection: SCALE_COLLECTION,
          settings: SCALE_SETTINGS,
          docs: Array.from({ length: Number(o.scale) }, (_, i) => scaleDoc(i)),
        };
  const { docs } = input;
  // A load and a rebuild of 10^5 scale documents with the lists on take minutes on a busy machine.
  const waitMs = waitMsMax(docs.length, REPLAY_MS_PER_DOC_MAX);
  const builds: Build[] = [];
  try {
    for (const bin of o.bin) builds.push(await startBuild(bin, opts.args, o.cpuProf, input));
    console.log(`${docs.length} documents; flags: ${opts.args.join(' ') || '(none)'}`);
    for (let round = 0; round < Number(o.rounds); round++) {
      for (const build of builds) {
        const fromUs = monotonicUs();
        const threads = new ThreadTimesWindow(build.server.pid);
        const seconds = (await rebuildServeNode(build.server.url, input.collection, waitMs)) / 1000;
        build.windowsUs.push([fromUs, monotonicUs()]);
        const serveThread = threads.busiest();
        const perSec = docs.length / seconds;
        const barePerSec = rawFtsInsertRate(docs);
        console.log(
          `round ${round} ${build.bin}: ${perSec.toFixed(0)} docs/s, bare FTS5 ${barePerSec.toFixed(0)} docs/s, ratio ${(perSec / barePerSec).toFixed(2)}; serve ${formatThreadTimes(serveThread)}`,
        );
      }
    }
    for (const build of builds) {
      await build.server.stop();
      if (build.profileDir === null) continue;
      const profile = serveProfile(build.profileDir);
      if (profile === null) {
        console.log(`no profile of the serve thread in ${build.profileDir}`);
        continue;
      }
      printSelfTimes(
        `serve thread of ${build.bin}, the rebuilds`,
        selfTimesOver(profile, build.windowsUs),
      );
    }
  } finally {
    for (const build of builds) {
      await build.server.stop();
      for (const dir of [build.dataDir, build.profileDir]) {
        if (dir !== null) rmSync(dir, { recursive: true, force: true });
      }
    }
    removeBenchDirs();
  }
}

await main();
