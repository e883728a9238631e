/**
 * Where one thread's wall time went over a window, from the scheduler's own accounting
 * (`/proc/<pid>/task/<tid>/schedstat`: time on a CPU, time runnable but waiting for one): the
 * rest it was blocked, waiting for work. A V8 profile cannot tell these apart: a thread woken
 * while the cores are busy stays in V8's `(idle)` state until it runs, so on a loaded machine
 * the profile's idle share is mostly waiting for a core, not for work.
 */
import { readdirSync, readFileSync } from 'node:fs';

export interface ThreadTimes {
  tid: number;
  wallMs: number;
  /** On a CPU. */
  runMs: number;
  /** Runnable, waiting for a CPU. */
  queuedMs: number;
  /** Neither: waiting for I/O, a message, a timer. */
  blockedMs: number;
}

/** Each thread's time on a CPU and waiting for one since it started, by thread id. */
export type Sched = Map<number, { runNs: number; queuedNs: number }>;

export function readSched(pid: number): Sched {
  const sched: Sched = new Map();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const [runNs, queuedNs] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8')
        .split(' ')
        .map(Number);
      sched.set(Number(tid), { runNs, queuedNs });
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return sched;
}

export class ThreadTimesWindow {
  private readonly startMs = performance.now();
  private readonly before: Sched;

  constructor(private readonly pid: number) {
    this.before = readSched(pid);
  }

  /** The thread of the process that ran the most since the window opened. */
  busiest(): ThreadTimes {
    const wallMs = performance.now() - this.startMs;
    let best: ThreadTimes = { tid: 0, wallMs, runMs: 0, queuedMs: 0, blockedMs: wallMs };
    for (const [tid, now] of readSched(this.pid)) {
      const then = this.before.get(tid) ?? { runNs: 0, queuedNs: 0 };
      const runMs = (now.runNs - then.runNs) / 1e6;
      if (runMs <= best.runMs) continue;
      const queuedMs = (now.queuedNs - then.queuedNs) / 1e6;
      best = { tid, wallMs, runMs, queuedMs, blockedMs: Math.max(wallMs - runMs - queuedMs, 0) };
    }
    return best;
  }
}

export function formatThreadTimes(times: ThreadTimes): string {
  const share = (ms: number) => `${ms.toFixed(0)} ms (${((100 * ms) / times.wallMs).toFixed(0)}%)`;
  return `thread ${times.tid} over ${times.wallMs.toFixed(0)} ms: on a CPU ${share(times.runMs)}, waiting for a CPU ${share(times.queuedMs)}, blocked ${share(times.blockedMs)}`;
}
