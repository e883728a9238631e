/**
 * Where one thread's wall time went over a window, from the scheduler's own accounting
 * (`/proc/<pid>/task/<tid>/schedstat`: time on a CPU, time runnable but waiting for one): the
 * rest it was blocked, waiting for work. A V8 profile cannot tell these apart: a thread woken
 * while the cores are busy stays in V8's `(idle)` state until it runs, so on a loaded machine
 * the profile's idle share is mostly waiting for a core, not for work.
 */
import { readFileSync } from 'node:fs';
import { threadIds } from './cpu-share.js';

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
type Sched = Map<number, { runNs: number; queuedNs: number }>;

function readSched(pid: number): Sched {
  const sched: Sched = new Map();
  for (const tid of threadIds(pid)) {
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

  /** Each live thread of the process, the one that ran the most since the window opened first. */
  threads(): ThreadTimes[] {
    const wallMs = performance.now() - this.startMs;
    const rows = [...readSched(this.pid)].map(([tid, now]): ThreadTimes => {
      const then = this.before.get(tid) ?? { runNs: 0, queuedNs: 0 };
      const runMs = (now.runNs - then.runNs) / 1e6;
      const queuedMs = (now.queuedNs - then.queuedNs) / 1e6;
      return { tid, wallMs, runMs, queuedMs, blockedMs: Math.max(wallMs - runMs - queuedMs, 0) };
    });
    return rows.sort((a, b) => b.runMs - a.runMs);
  }

  /** The thread of the process that ran the most since the window opened. */
  busiest(): ThreadTimes {
    const [top] = this.threads();
    if (top !== undefined && top.runMs > 0) return top;
    const wallMs = top?.wallMs ?? performance.now() - this.startMs;
    return { tid: 0, wallMs, runMs: 0, queuedMs: 0, blockedMs: wallMs };
  }
}

export function formatThreadTimes(times: ThreadTimes): string {
  const share = (ms: number) => `${ms.toFixed(0)} ms (${((100 * ms) / times.wallMs).toFixed(0)}%)`;
  return `thread ${times.tid} over ${times.wallMs.toFixed(0)} ms: on a CPU ${share(times.runMs)}, waiting for a CPU ${share(times.queuedMs)}, blocked ${share(times.blockedMs)}`;
}
