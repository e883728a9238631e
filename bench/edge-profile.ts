/**
 * Where the HTTP edge's time goes on a read (issue 28, "the HTTP edge's cost per request"):
 * `node dist/bench/edge-profile.js` starts `tailbase start` with `--cpu-prof` (every thread
 * writes a V8 profile as it exits), loads `--documents` of the bench's document, then runs wrk
 * (`--connections`, 16) for `--seconds` a workload: GET by key over every key, then a 20-key
 * scan from every tenth. After a clean stop it prints each workload's rate, the busy µs a
 * request of the main thread (HTTP, gateway, key reads) and of the read threads, their heaviest
 * functions, and the main thread's time by origin (Node, hono, lmdb, tailbase's folders).
 * `--flags` passes flags to `tailbase start` (`--read-threads 0`); `--keep-profiles` keeps the
 * profiles for a closer look (Chrome DevTools, or a call tree). Then the bare hono handler
 * (bare-hono-server.ts) under the reference load of references.ts, profiled the same way, so each
 * workload's rate and busy µs a request stand beside the bare handler's of the same run.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { request } from './api-workloads.js';
import {
  monotonicUs,
  originOf,
  printSelfTimes,
  ranFile,
  readProfiles,
  selfTimes,
  type CpuProfile,
  type SelfTimes,
} from './cpu-profile.js';
import { ThreadCpuWindow } from './cpu-share.js';
import { startEmbedded } from './embedded.js';
import { runLoad } from './load.js';
import type { WrkRun } from './wrk.js';
import { freePort, spawnServer } from './processes.js';
import { HONO_BODY_BYTES, makeBenchDir, removeBenchDirs } from './references.js';
import { DOCUMENT, keyOf } from './workload.js';

const BULK_CHUNK = 500;
/** The unmeasured load before each measured one. */
const WARM_UP_S = 1;

interface Window {
  name: string;
  fromUs: number;
  toUs: number;
  requestsPerSec: number;
  requests: number;
  /** The main thread's CPU (user + system, /proc) a request, µs: wall-clock samples count preemption too. */
  mainCpuUs: number;
}

const THREAD_NAMES = { main: 'main', busiest: 'busiest', second: 'second', rest: 'rest' };

async function main(): Promise<void> {
  const opts = new Command()
    .option('--documents <n>', 'documents to load', '10000')
    .option('--seconds <n>', 'seconds of wrk a workload', '10')
    .option('--connections <n>', 'wrk connections', '16')
    .option('--keep-profiles <dir>', 'leave the .cpuprofile files in this directory')
    .option('--flags <flags>', 'more flags of tailbase start, space-separated', '')
    .parse(process.argv)
    .opts<{
      documents: string;
      seconds: string;
      connections: string;
      keepProfiles?: string;
      flags: string;
    }>();
  const documents = Number(opts.documents);
  const seconds = Number(opts.seconds);
  const dataDir = makeBenchDir('edge-profile-data');
  const profileDir = opts.keepProfiles ?? makeBenchDir('edge-profile-cpu');
  const windows: Window[] = [];
  try {
    const server = await startEmbedded(dataDir, {
      nodeFlags: ['--cpu-prof', `--cpu-prof-dir=${profileDir}`],
      flags: opts.flags.split(' ').filter((flag) => flag !== ''),
    });
    try {
      const keys = Array.from({ length: documents }, (_, i) => keyOf(i));
      let token = '';
      for (let i = 0; i < keys.length; i += BULK_CHUNK) {
        const chunk = keys.slice(i, i + BULK_CHUNK).map((key) => ({
          key,
          value: JSON.parse(DOCUMENT) as unknown,
        }));
        ({ token } = await request(`${server.url}/v1/collections/bench/docs`, {
          method: 'POST',
          body: JSON.stringify(chunk),
        }));
      }
      await request(`${server.url}/v1/collections/bench/docs?limit=1&wait_ms=30000`, {
        headers: { 'tailbase-token': token },
      });
      const workloads: Array<[string, string[]]> = [
        ['GET', keys.map((key) => `/v1/collections/bench/docs/${key}`)],
        [
          'scan',
          keys
            .filter((_, i) => i % 10 === 0)
            .map((key) => `/v1/collections/bench/docs?limit=20&start=${key}`),
        ],
      ];
      for (const [name, paths] of workloads) {
        windows.push(
          await measuredWindow(name, server.pid, {
            baseUrl: server.url,
            method: 'GET',
            targets: paths.map((path) => ({ path })),
            connections: Number(opts.connections),
            threads: 2,
            durationS: seconds,
          }),
        );
      }
    } finally {
      await server.stop();
    }
    const bare = await profileBare(opts, join(profileDir, 'bare'));
    const profiles = readProfiles(profileDir);
    const main = profiles.find((p) => p.threadId === 0);
    // A read thread answers every read through its ReadNode; the apply thread has none.
    const readers = profiles.filter((p) => p.threadId !== 0 && ranFile(p, 'read-node.js'));
    for (const window of windows) {
      console.log(`\n${window.name}: ${window.requestsPerSec.toFixed(0)} req/s`);
      const busy = [
        ...(main === undefined
          ? []
          : [['main thread', selfTimes(main, window.fromUs, window.toUs)]]),
        ...(readers.length > 0 ? [['read threads', together(readers, window)]] : []),
      ] as Array<[string, SelfTimes]>;
      // The rate moves with the machine's other load; the CPU a request takes moves less.
      const perRequest = busy.map(
        ([label, times]) =>
          `${label} ${(((times.totalMs - times.idleMs) * 1000) / window.requests).toFixed(0)}`,
      );
      console.log(`busy µs per request: ${perRequest.join(', ')}`);
      console.log(`main thread CPU µs per request: ${window.mainCpuUs.toFixed(0)}`);
      for (const [label, times] of busy) printSelfTimes(label, times);
      if (main !== undefined) {
        const origins = selfTimes(main, window.fromUs, window.toUs, originOf);
        printSelfTimes('main thread by origin', origins);
      }
    }
    console.log(
      `\nbare hono handler (POST /echo): ${bare.requestsPerSec.toFixed(0)} req/s, busy µs per request ${bare.busyUs.toFixed(0)}, main thread CPU µs per request ${bare.mainCpuUs.toFixed(0)}`,
    );
    printSelfTimes('bare hono handler', bare.times);
    for (const window of windows) {
      const ratio = (window.requestsPerSec / bare.requestsPerSec).toFixed(2);
      const cpuRatio = (window.mainCpuUs / bare.mainCpuUs).toFixed(2);
      console.log(
        `${window.name} / bare hono handler: rate ${ratio}x, main thread CPU a request ${cpuRatio}x`,
      );
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
    if (opts.keepProfiles === undefined) rmSync(profileDir, { recursive: true, force: true });
    removeBenchDirs();
  }
}

/**
 * A load on the process `pid`, timed on the profiles' clock, its main thread's CPU measured,
 * after a second of the same load unmeasured (as references.ts warms the bare handler), so
 * neither side is measured while its code is still being compiled.
 */
async function measuredWindow(name: string, pid: number, run: WrkRun): Promise<Window> {
  await runLoad({ ...run, durationS: WARM_UP_S });
  const cpu = new ThreadCpuWindow(pid, THREAD_NAMES);
  const fromUs = monotonicUs();
  const result = await runLoad(run);
  return {
    name,
    fromUs,
    toUs: monotonicUs(),
    requestsPerSec: result.requestsPerSec,
    requests: result.requests,
    mainCpuUs: cpu.microsPerRequest(result.requests).main,
  };
}

/** The bare hono handler's process under the reference load, for as long as each workload. */
async function profileBare(
  opts: { seconds: string; connections: string },
  profileDir: string,
): Promise<{ requestsPerSec: number; busyUs: number; mainCpuUs: number; times: SelfTimes }> {
  const port = await freePort();
  const script = fileURLToPath(new URL('./bare-hono-server.js', import.meta.url));
  const server = await spawnServer({
    args: ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, script, String(port)],
    port,
    readyPath: '/healthz',
  });
  let window: Window;
  try {
    window = await measuredWindow('bare', server.pid, {
      baseUrl: server.url,
      method: 'POST',
      targets: [{ path: '/echo', body: Buffer.alloc(HONO_BODY_BYTES, 0x63) }],
      connections: Number(opts.connections),
      threads: 2,
      durationS: Number(opts.seconds),
    });
  } finally {
    await server.stop();
  }
  const main = readProfiles(profileDir).find((p) => p.threadId === 0);
  if (main === undefined) throw new Error('the bare hono handler wrote no profile');
  const times = selfTimes(main, window.fromUs, window.toUs);
  const busyUs = ((times.totalMs - times.idleMs) * 1000) / window.requests;
  return { requestsPerSec: window.requestsPerSec, busyUs, mainCpuUs: window.mainCpuUs, times };
}

/** The self times of several threads over one window, summed. */
function together(profiles: CpuProfile[], window: Window): SelfTimes {
  const sums = new Map<string, number>();
  let totalMs = 0;
  let idleMs = 0;
  for (const profile of profiles) {
    const times = selfTimes(profile, window.fromUs, window.toUs);
    totalMs += times.totalMs;
    idleMs += times.idleMs;
    for (const [name, ms] of times.top) sums.set(name, (sums.get(name) ?? 0) + ms);
  }
  const top = [...sums.entries()].sort((a, b) => b[1] - a[1]);
  return { totalMs, idleMs, top };
}

await main();
