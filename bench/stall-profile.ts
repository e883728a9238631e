/**
 * Why bulk writes stall during a long load (issue 26, the 10^7 run): `node
 * dist/bench/stall-profile.js --documents 2e6` loads the scale corpus (generated as it is posted,
 * so no corpus file competes for the disk) into `tailbase start` at normal priority, and every
 * second prints the bulk answers of that second (count, slowest), the kernel's dirty and writeback
 * memory, the gateway's mean append time, and each of the server's threads blocked in a
 * disk-bound system call for longer than BLOCKED_MS_MIN: the call, the file it works on, how long
 * it has waited so far. Threads are sampled every SAMPLE_THREADS_MS from /proc (no tracer, so
 * nothing is slowed by the looking).
 */
import { readFileSync, readlinkSync, rmSync } from 'node:fs';
import { basename } from 'node:path';
import { Command } from 'commander';
import { request } from './api-workloads.js';
import { threadIds, threadTicks } from './cpu-share.js';
import { startEmbedded } from './embedded.js';
import { CLOCK_TICKS_PER_S } from './processes.js';
import { makeBenchDir, removeBenchDirs } from './references.js';
import { scaleDoc } from './scale-corpus.js';
import { COLLECTION, postLines, SETTINGS } from './scale-tailbase.js';

const SAMPLE_MS = 1_000;
const SAMPLE_THREADS_MS = 100;
/** A blocked call is printed once it has waited this long. */
const BLOCKED_MS_MIN = 300;
/** The sample loop's bound: 20 minutes of seconds. */
const SAMPLES_MAX = 1_200;
const BUSIEST_SHOWN = 3;

/** x86_64 system calls that wait for the disk, by number (/proc/PID/task/TID/syscall). */
const DISK_CALLS = new Map<number, string>([
  [0, 'read'],
  [1, 'write'],
  [17, 'pread64'],
  [18, 'pwrite64'],
  [20, 'writev'],
  [26, 'msync'],
  [74, 'fsync'],
  [75, 'fdatasync'],
  [76, 'truncate'],
  [77, 'ftruncate'],
  [82, 'rename'],
  [87, 'unlink'],
  [257, 'openat'],
  [285, 'fallocate'],
  [295, 'preadv'],
  [296, 'pwritev'],
]);

interface Blocked {
  call: string;
  file: string;
  sinceMs: number;
}

/** The threads of `pid` in a disk-bound call now, with the file of its first argument. */
function blockedThreads(pid: number): Map<number, { call: string; file: string; state: string }> {
  const out = new Map<number, { call: string; file: string; state: string }>();
  for (const tid of threadIds(pid)) {
    try {
      const fields = readFileSync(`/proc/${pid}/task/${tid}/syscall`, 'utf8').trim().split(' ');
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
      const call = DISK_CALLS.get(Number(fields[0]));
      if (call === undefined) {
        if (state === 'D') out.set(Number(tid), { call: 'fault', file: '', state });
        continue;
      }
      let file = '';
      if (call !== 'rename' && call !== 'unlink' && call !== 'openat' && call !== 'truncate') {
        try {
          file = readlinkSync(`/proc/${pid}/fd/${Number(fields[1])}`);
        } catch {
          file = `fd ${Number(fields[1])}`;
        }
      }
      out.set(Number(tid), { call, file: shortName(file), state });
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return out;
}

/** A file as the report names it: the partition's directory and the file, or the file alone. */
function shortName(file: string): string {
  const parts = file.split('/');
  const name = basename(file);
  return name.endsWith('.log') || name.endsWith('.index') || name === 'recovery-point'
    ? `${parts[parts.length - 2]}/${name}`
    : name;
}

/** Each thread's CPU time so far, ms. */
function threadCpuMs(pid: number): Map<number, number> {
  return new Map(
    [...threadTicks(pid)].map(([tid, ticks]) => [tid, (ticks * 1000) / CLOCK_TICKS_PER_S]),
  );
}

/** The busiest threads between two readings: `tid:ms` of CPU, most first. */
function busiest(before: Map<number, number>, after: Map<number, number>): string {
  return [...after]
    .map(([tid, ms]) => [tid, ms - (before.get(tid) ?? 0)] as const)
    .filter(([, ms]) => ms > 0)
    .sort((a, b) => b[1] - a[1])
    .slice(0, BUSIEST_SHOWN)
    .map(([tid, ms]) => `${tid}:${ms}`)
    .join(' ');
}

function meminfoMb(): { dirty: number; writeback: number } {
  const text = readFileSync('/proc/meminfo', 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(text)?.[1]);
  return { dirty: kb('Dirty') / 1024, writeback: kb('Writeback') / 1024 };
}

/** The gateway's append histogram's sum and count (seconds, batches). */
async function appendTotals(url: string): Promise<{ sum: number; count: number }> {
  const response = await fetch(`${url}/metrics`);
  const text = await response.text();
  const total = (suffix: string) =>
    [
      ...text.matchAll(
        new RegExp(`^tailbase_gateway_append_duration_seconds_${suffix}\\S* (\\S+)$`, 'gm'),
      ),
    ]
      .map((m) => Number(m[1]))
      .reduce((a, b) => a + b, 0);
  return { sum: total('sum'), count: total('count') };
}

/** Lines generated between two turns of the event loop, so the samplers' timers keep time. */
const LINES_PER_TURN = 250;

async function* corpusLines(count: number): AsyncIterable<string> {
  for (let i = 0; i < count; i++) {
    if (i % LINES_PER_TURN === 0) await new Promise((resolve) => setImmediate(resolve));
    yield JSON.stringify(scaleDoc(i));
  }
}

async function main(): Promise<void> {
  const opts = new Command()
    .option('--documents <n>', 'documents to load', '2e6')
    .option('--flag <flag...>', 'extra flags for tailbase start', [])
    .parse(process.argv)
    .opts<{ documents: string; flag: string[] }>();
  const documents = Number(opts.documents);
  const dataDir = makeBenchDir('stall-profile');
  const server = await startEmbedded(dataDir, { flags: opts.flag });
  console.log(`pid ${server.pid}, data ${dataDir}`);
  try {
    await request(`${server.url}/v1/collections/${COLLECTION}/settings`, {
      method: 'PUT',
      body: JSON.stringify(SETTINGS),
    });
    const started = performance.now();
    let answers: number[] = [];
    let acked = 0;
    let done = false;
    const blocked = new Map<number, Blocked>();
    /** Blocks that ended within the current second, longest first when printed. */
    let ended: string[] = [];
    /** The files each thread was seen in a disk call on, with how often: names the threads. */
    const filesByThread = new Map<number, Map<string, number>>();
    const threads = setInterval(() => {
      const now = performance.now();
      const seen = blockedThreads(server.pid);
      for (const [tid, was] of blocked) {
        const is = seen.get(tid);
        if (is?.call === was.call && is.file === was.file) continue;
        const ms = now - was.sinceMs;
        if (ms >= BLOCKED_MS_MIN) ended.push(`${tid} ${was.call} ${was.file} ${Math.round(ms)}ms`);
        blocked.delete(tid);
      }
      for (const [tid, is] of seen) {
        const kind = is.file.replace(/^\d+\//, '').replace(/^\d{20}\./, '');
        const files = filesByThread.get(tid) ?? new Map<string, number>();
        files.set(`${is.call} ${kind}`, (files.get(`${is.call} ${kind}`) ?? 0) + 1);
        filesByThread.set(tid, files);
        if (!blocked.has(tid)) blocked.set(tid, { call: is.call, file: is.file, sinceMs: now });
      }
    }, SAMPLE_THREADS_MS);
    const sampling = (async () => {
      let last = await appendTotals(server.url);
      let cpuBefore = threadCpuMs(server.pid);
      console.log(
        'second docs-acked bulks slowest-ms dirty-MB writeback-MB append-mean-ms appends | busiest threads (tid:cpu-ms) | blocked calls (tid call file ms; * = still waiting)',
      );
      for (let i = 0; i < SAMPLES_MAX && !done; i++) {
        await new Promise((resolve) => setTimeout(resolve, SAMPLE_MS));
        const now = performance.now();
        const totals = await appendTotals(server.url).catch(() => last);
        const count = totals.count - last.count;
        const meanMs = count > 0 ? ((totals.sum - last.sum) / count) * 1000 : 0;
        last = totals;
        const { dirty, writeback } = meminfoMb();
        const cpuNow = threadCpuMs(server.pid);
        const cpu = busiest(cpuBefore, cpuNow);
        cpuBefore = cpuNow;
        const waiting = [...blocked]
          .filter(([, b]) => now - b.sinceMs >= BLOCKED_MS_MIN)
          .map(([tid, b]) => `${tid} ${b.call} ${b.file} ${Math.round(now - b.sinceMs)}ms*`);
        console.log(
          [
            ((now - started) / 1000).toFixed(0).padStart(5),
            String(acked).padStart(8),
            String(answers.length).padStart(3),
            String(Math.round(Math.max(0, ...answers))).padStart(6),
            dirty.toFixed(0).padStart(5),
            writeback.toFixed(0).padStart(5),
            meanMs.toFixed(0).padStart(6),
            String(count).padStart(4),
            '|',
            cpu,
            '|',
            [...ended, ...waiting].join(', '),
          ].join(' '),
        );
        answers = [];
        ended = [];
      }
    })();
    try {
      await postLines(server.url, corpusLines(documents), () => {}, {
        onAnswer: (ms, n) => {
          answers.push(ms);
          acked += n;
        },
      });
    } finally {
      done = true;
      clearInterval(threads);
      await sampling;
    }
    for (const [tid, files] of filesByThread) {
      const top = [...files].sort((a, b) => b[1] - a[1]).slice(0, BUSIEST_SHOWN);
      console.log(`thread ${tid}: ${top.map(([f, n]) => `${f} x${n}`).join(', ')}`);
    }
    console.log(`loaded ${documents} in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  } finally {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
    removeBenchDirs();
  }
}

await main();
