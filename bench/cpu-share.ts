/**
 * Where a load's CPU went: each process's CPU per request (from /proc/<pid>/stat) and how busy the
 * whole machine was (from /proc/stat), over the same window: which process to look at, and
 * whether the load left the machine idle.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { CLOCK_TICKS_PER_S, readStatTicks, type RunningProcess } from './processes.js';
import type { CpuShare } from './types.js';

interface MachineTicks {
  busy: number;
  total: number;
}

/** The first line of /proc/stat: ticks spent per state since boot, over every core. */
function readMachineTicks(): MachineTicks | null {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0];
    const ticks = line.trim().split(/\s+/).slice(1).map(Number);
    const total = ticks.reduce((a, b) => a + b, 0);
    // user nice system idle iowait irq softirq steal ...: idle and iowait are not busy.
    return { busy: total - ticks[3] - ticks[4], total };
  } catch {
    return null;
  }
}

/** Percent of every core's time that was busy (any process) since `then`; -1 if unknown. */
function busyPercentSince(then: MachineTicks | null): number {
  const now = readMachineTicks();
  if (then === null || now === null || now.total === then.total) return -1;
  return (100 * (now.busy - then.busy)) / (now.total - then.total);
}

export class CpuWindow {
  private readonly machine = readMachineTicks();
  private readonly before: Map<string, number>;

  constructor(private readonly processes: Record<string, RunningProcess[]>) {
    this.before = new Map(Object.entries(processes).map(([name, p]) => [name, cpuOf(p)]));
  }

  /** Percent of every core's time that was busy (any process) since the window opened; -1 if unknown. */
  machineBusyPercent(): number {
    return busyPercentSince(this.machine);
  }

  /** CPU microseconds each named group of processes spent per request since the window opened. */
  microsPerRequest(requests: number): CpuShare['microsPerRequest'] {
    const micros: Record<string, number> = {};
    for (const [name, processes] of Object.entries(this.processes)) {
      const seconds = cpuOf(processes) - this.before.get(name)!;
      micros[name] = requests > 0 ? (seconds * 1e6) / requests : 0;
    }
    return micros;
  }
}

function cpuOf(processes: RunningProcess[]): number {
  return processes.reduce((sum, p) => sum + p.cpuSeconds(), 0);
}

/**
 * Where one process's CPU went by thread: its main thread, its two busiest other threads (for
 * `tailbase start`, the log-node's and the serve-node's workers), and the rest (libuv's pool
 * doing the log's writes, V8's GC helpers). Node names every thread "node", so the workers are
 * found by their share, not by name.
 */
export class ThreadCpuWindow {
  private readonly machine = readMachineTicks();
  private readonly before: Map<number, number>;

  constructor(
    private readonly pid: number,
    private readonly names: { main: string; busiest: string; second: string; rest: string },
  ) {
    this.before = threadTicks(pid);
  }

  machineBusyPercent(): number {
    return busyPercentSince(this.machine);
  }

  microsPerRequest(requests: number): CpuShare['microsPerRequest'] {
    const spent = [...threadTicks(this.pid)].map(([tid, ticks]) => ({
      tid,
      ticks: ticks - (this.before.get(tid) ?? 0),
    }));
    const main = spent.find((thread) => thread.tid === this.pid)?.ticks ?? 0;
    const others = spent
      .filter((thread) => thread.tid !== this.pid)
      .sort((a, b) => b.ticks - a.ticks);
    const busiest = others[0]?.ticks ?? 0;
    const second = others[1]?.ticks ?? 0;
    const rest = others.slice(2).reduce((sum, thread) => sum + thread.ticks, 0);
    const micros = (ticks: number) =>
      requests > 0 ? ((ticks / CLOCK_TICKS_PER_S) * 1e6) / requests : 0;
    return {
      [this.names.main]: micros(main),
      [this.names.busiest]: micros(busiest),
      [this.names.second]: micros(second),
      [this.names.rest]: micros(rest),
    };
  }
}

/** The thread ids of `pid` now; none once it has exited. */
export function threadIds(pid: number): string[] {
  try {
    return readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
}

/** User + system ticks of each thread of `pid` (threads that ended are gone from the map). */
export function threadTicks(pid: number): Map<number, number> {
  const ticks = new Map<number, number>();
  for (const tid of threadIds(pid)) {
    try {
      ticks.set(Number(tid), readStatTicks(`/proc/${pid}/task/${tid}/stat`));
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return ticks;
}
