/**
 * Where a load's CPU went: each process's CPU per request (from /proc/<pid>/stat) and how busy the
 * whole machine was (from /proc/stat), over the same window: which process to look at, and
 * whether the load left the machine idle.
 */
import { readFileSync } from 'node:fs';
import type { RunningProcess } from './processes.js';
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

export class CpuWindow {
  private readonly machine = readMachineTicks();
  private readonly before: Map<string, number>;

  constructor(private readonly processes: Record<string, RunningProcess[]>) {
    this.before = new Map(Object.entries(processes).map(([name, p]) => [name, cpuOf(p)]));
  }

  /** Percent of every core's time that was busy (any process) since the window opened; -1 if unknown. */
  machineBusyPercent(): number {
    const now = readMachineTicks();
    if (this.machine === null || now === null || now.total === this.machine.total) return -1;
    return (100 * (now.busy - this.machine.busy)) / (now.total - this.machine.total);
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
