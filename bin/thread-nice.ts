/**
 * A worker thread's own scheduling priority. Linux keeps a nice value per thread and lets it be
 * set by the thread's id, which `/proc/thread-self` names; elsewhere threads share the process's,
 * and this does nothing.
 */
import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

/** The weakest priority Linux has (nice 19). */
const NICE_MAX = 19;

/**
 * Lowers the calling thread's priority by `levels` nice levels (at most to 19; raising it needs
 * a privilege, so negative levels are refused by the flag). Returns the thread's nice value, or
 * null when it was left alone.
 */
export function niceThisThread(levels: number): number | null {
  if (levels <= 0) return null;
  let tid: number;
  try {
    tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
  } catch {
    return null;
  }
  const nice = Math.min(getPriority(tid) + levels, NICE_MAX);
  setPriority(tid, nice);
  return nice;
}
