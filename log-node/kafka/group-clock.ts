/**
 * Time for the group coordinator: the current time and timers (session expiry, rebalance and sync
 * deadlines), injected so unit tests run a group's life on a fake clock without sleeping.
 */
import type { Clock } from '../clock.js';

export interface GroupClock extends Clock {
  /** Runs `run` once after `delayMs`; the returned function cancels it. */
  schedule(delayMs: number, run: () => void): () => void;
}

export const systemGroupClock: GroupClock = {
  nowMs: () => Date.now(),
  schedule(delayMs, run) {
    // Unref'd: a group's timers never keep a process alive that is otherwise done.
    const timer = setTimeout(run, delayMs).unref();
    return () => clearTimeout(timer);
  },
};
