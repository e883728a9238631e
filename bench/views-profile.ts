/**
 * Where the time goes when views run beside source writes (issue 29's benchmark):
 * `node dist/bench/views-profile.js` starts `tailbase start` with `--cpu-prof` (every thread
 * writes a V8 profile as it exits), declares `--views` of the views group's views, loads
 * `--documents` source documents, waits until the views have processed them, then runs the
 * views group's PUT load (wrk) for `--seconds` after a second unmeasured. After a clean stop it
 * prints the rate, each thread's busy µs a PUT, the main thread's time by the tailbase folder
 * nearest the sample on its stack (gateway/ for the HTTP edge, views/ for the processors; frames
 * outside tailbase, lmdb's or Node's, count for the tailbase code that called them), and the
 * heaviest functions of each thread. `--flags` passes flags to `tailbase start`; `--bin`
 * another build's `bin/tailbase.js`, to set two builds side by side.
 */
import { rmSync } from 'node:fs';
import { Command } from 'commander';
import {
  monotonicUs,
  originOf,
  printSelfTimes,
  ranFile,
  readProfiles,
  selfTimes,
  type CpuProfile,
} from './cpu-profile.js';
import { ThreadCpuWindow } from './cpu-share.js';
import { startEmbedded } from './embedded.js';
import { makeBenchDir, removeBenchDirs } from './references.js';
import { caughtUp, declareViews, loadSource, putLoad } from './views.js';

const WARM_UP_S = 1;
const THREAD_NAMES = { main: 'main', busiest: 'busiest', second: 'second', rest: 'rest' };

async function main(): Promise<void> {
  const opts = new Command()
    .option('--documents <n>', 'source documents to load', '20000')
    .option('--views <n>', 'views to declare (0 to 3)', '1')
    .option('--seconds <n>', 'seconds of PUT load', '10')
    .option('--flags <flags>', 'more flags of tailbase start, space-separated', '')
    .option('--bin <path>', "another build's bin/tailbase.js")
    .option('--keep-profiles <dir>', 'leave the .cpuprofile files in this directory')
    .parse(process.argv)
    .opts<{
      documents: string;
      views: string;
      seconds: string;
      flags: string;
      bin?: string;
      keepProfiles?: string;
    }>();
  const dataDir = makeBenchDir('views-profile-data');
  const profileDir = opts.keepProfiles ?? makeBenchDir('views-profile-cpu');
  let window: { fromUs: number; toUs: number; requests: number; rate: number };
  let threadUs: Record<string, number>;
  try {
    const server = await startEmbedded(dataDir, {
      nodeFlags: ['--cpu-prof', `--cpu-prof-dir=${profileDir}`],
      flags: opts.flags.split(' ').filter((flag) => flag !== ''),
      bin: opts.bin,
    });
    try {
      const names = await declareViews(server.url, Number(opts.views));
      await loadSource(server.url, Number(opts.documents));
      for (const name of names) await caughtUp(server.url, name, Date.now());
      await putLoad(server.url, WARM_UP_S);
      const cpu = new ThreadCpuWindow(server.pid, THREAD_NAMES);
      const fromUs = monotonicUs();
      const put = await putLoad(server.url, Number(opts.seconds));
      window = { fromUs, toUs: monotonicUs(), requests: put.requests, rate: put.requestsPerSec };
      threadUs = cpu.microsPerRequest(put.requests);
    } finally {
      await server.stop();
    }
    console.log(`PUT with ${opts.views} views: ${window.rate.toFixed(0)} writes/s`);
    const cpuUs = Object.entries(threadUs).map(([name, us]) => `${name} ${us.toFixed(0)}`);
    console.log(`CPU µs a PUT by thread (/proc): ${cpuUs.join(', ')}`);
    const profiles = readProfiles(profileDir);
    const roles: Array<[string, CpuProfile | undefined]> = [
      ['main thread', profiles.find((p) => p.threadId === 0)],
      ['log-node thread', profiles.find((p) => ranFile(p, 'log-worker.js'))],
      ['serve-node apply thread', profiles.find((p) => ranFile(p, 'serve-worker.js'))],
      ['view processors thread', profiles.find((p) => ranFile(p, 'views-worker.js'))],
    ];
    for (const [label, profile] of roles) {
      if (profile === undefined) continue;
      const times = selfTimes(profile, window.fromUs, window.toUs);
      const busyUs = ((times.totalMs - times.idleMs) * 1000) / window.requests;
      console.log(`\n${label}: busy ${busyUs.toFixed(0)} µs a PUT`);
      printSelfTimes(label, times);
      if (profile.threadId === 0) {
        printSelfTimes(
          'main thread by the nearest tailbase folder on the stack',
          selfTimes(profile, window.fromUs, window.toUs, nearestFolder(profile)),
        );
      }
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
    if (opts.keepProfiles === undefined) rmSync(profileDir, { recursive: true, force: true });
    removeBenchDirs();
  }
}

/**
 * A sample's name: the innermost tailbase folder on its stack other than shared/ (which every
 * role calls), or shared/ when it is the only one, or its own frame's origin when no tailbase
 * frame called it (a socket's callback in Node).
 */
function nearestFolder(profile: CpuProfile): (frame: unknown, nodeId: number) => string {
  const parent = new Map<number, number>();
  for (const node of profile.nodes) {
    for (const child of node.children ?? []) parent.set(child, node.id);
  }
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const names = new Map<number, string>();
  return (_frame, nodeId) => {
    const known = names.get(nodeId);
    if (known !== undefined) return known;
    let name = originOf(byId.get(nodeId)!.callFrame);
    for (let id: number | undefined = nodeId; id !== undefined; id = parent.get(id)) {
      const folder = byId.get(id)!.callFrame.url.match(/\/dist\/([^/]+)\//)?.[1];
      if (folder === undefined) continue;
      name = `tailbase ${folder}/`;
      if (folder !== 'shared') break;
    }
    names.set(nodeId, name);
    return name;
  };
}

await main();
