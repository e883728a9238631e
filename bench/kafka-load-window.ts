/**
 * The measured window of an open-ended load against a log-node: the loops warm up, the window
 * opens for measureS, then they stop. Beside the window's length it reads this process's CPU (the
 * load client's), the log-node's, and the machine's busy share, so a figure bounded by its client
 * or by a full machine says so.
 */
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { RunningProcess } from './processes.js';

/** What a load loop reads: whether the measured window is open, and whether to stop. */
export interface Window {
  recording: boolean;
  stop: boolean;
}

export interface MeasuredWindow {
  durationS: number;
  clientCpuSeconds: number;
  nodeCpuSeconds: number;
  machineBusyPercent: number;
}

/** /proc/stat busy share of every core over a window (any process: other test runs included). */
export class MachineBusy {
  private readonly before = MachineBusy.ticks();
  static ticks(): { busy: number; total: number } {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0];
    const t = line.trim().split(/\s+/).slice(1).map(Number);
    const total = t.reduce((a, b) => a + b, 0);
    return { busy: total - t[3] - t[4], total };
  }
  percent(): number {
    const now = MachineBusy.ticks();
    const total = now.total - this.before.total;
    return total > 0 ? (100 * (now.busy - this.before.busy)) / total : -1;
  }
}

/**
 * Lets the loops warm up for warmupS, opens the window for measureS, then sets `window.stop`.
 */
export async function measureWindow(
  node: RunningProcess,
  warmupS: number,
  measureS: number,
  window: Window,
): Promise<MeasuredWindow> {
  await new Promise((resolve) => setTimeout(resolve, warmupS * 1000));
  const cpuBefore = process.cpuUsage();
  const nodeCpuBefore = node.cpuSeconds();
  const busy = new MachineBusy();
  const started = performance.now();
  window.recording = true;
  await new Promise((resolve) => setTimeout(resolve, measureS * 1000));
  window.recording = false;
  const cpu = process.cpuUsage(cpuBefore);
  const measured = {
    durationS: (performance.now() - started) / 1000,
    clientCpuSeconds: (cpu.user + cpu.system) / 1e6,
    nodeCpuSeconds: node.cpuSeconds() - nodeCpuBefore,
    machineBusyPercent: busy.percent(),
  };
  window.stop = true;
  return measured;
}
