/**
 * Whether this thread may take on more work now: open while its event loop was busy at most
 * `busyFractionMax` of the last `sampleMs` (Node's event-loop utilization, sampled on the calls
 * that ask, never on a timer). A read pool asks it before answering a key read on the HTTP
 * thread itself: one client's GET is quickest with no hop to a read thread, but when the HTTP
 * thread has a backlog it bounds the rate, and a key read sent to a read thread frees it (issue
 * 28's cores bench: 16 clients' GETs 17% faster on the read threads, one client's p50 2.5x slower).
 */
import { performance, type EventLoopUtilization } from 'node:perf_hooks';

export interface BusyGateOptions {
  /** The share of the last sample the event loop may have been busy, 0..1, for the gate to open. */
  busyFractionMax: number;
  /** How long a sample is, ms: the gate's state holds that long. */
  sampleMs: number;
}

export const BUSY_GATE_DEFAULTS: BusyGateOptions = { busyFractionMax: 0.9, sampleMs: 50 };

export class BusyGate {
  private sampleStart: EventLoopUtilization;
  private sampleStartMs: number;
  private open = true;

  constructor(
    private readonly options: BusyGateOptions = BUSY_GATE_DEFAULTS,
    /** The event loop's utilization so far, and the clock: injected by tests. */
    private readonly utilization: () => EventLoopUtilization = () =>
      performance.eventLoopUtilization(),
    private readonly nowMs: () => number = () => performance.now(),
  ) {
    this.sampleStart = this.utilization();
    this.sampleStartMs = this.nowMs();
  }

  isOpen(): boolean {
    const nowMs = this.nowMs();
    if (nowMs - this.sampleStartMs >= this.options.sampleMs) {
      const current = this.utilization();
      const active = current.active - this.sampleStart.active;
      const idle = current.idle - this.sampleStart.idle;
      this.open = active + idle === 0 || active / (active + idle) <= this.options.busyFractionMax;
      this.sampleStart = current;
      this.sampleStartMs = nowMs;
    }
    return this.open;
  }
}
