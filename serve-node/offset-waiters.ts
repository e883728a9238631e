/**
 * Reads that wait for offsets to be applied. The apply loop calls `notify` after each commit, so a
 * waiting read answers as soon as its offsets are in, with no polling; a bounded number may wait.
 */
import { TailbaseError, unavailable } from '../shared/errors.js';
import type { TopicPartition } from '../shared/log-api.js';
import { SETTINGS_TOPIC } from '../shared/topics.js';

/** A read needs `offset` of `partition` applied, i.e. applied[partition] > offset. */
export interface OffsetNeed {
  partition: number;
  offset: number;
}

/**
 * A need of one topic: a partition of the collection read, or the settings topic's partition a
 * read waits for, with the collection whose settings it needs in effect (a settings record is
 * applied before the re-index it starts is done).
 */
export interface TopicNeed extends OffsetNeed {
  topic: string;
  collection?: string;
}

/** Stores' applied offsets, as far as a read may rely on them. */
export interface AppliedSource {
  applied(topic: string, partition: number): number;
  /** The settings topic's offset whose records are all in effect for `collection`. */
  settingsApplied(collection: string): number;
}

/** How far a need is met in the stores `current()` answers: settings needs, in effect. */
export function appliedOfNeed(current: () => AppliedSource): (need: TopicNeed) => number {
  return (need) =>
    need.topic === SETTINGS_TOPIC && need.collection !== undefined
      ? current().settingsApplied(need.collection)
      : current().applied(need.topic, need.partition);
}

interface Waiter {
  needs: readonly TopicNeed[];
  resolve(): void;
  reject(error: Error): void;
  timer: NodeJS.Timeout;
}

export class OffsetWaiters {
  private readonly waiting = new Set<Waiter>();

  constructor(
    private readonly waitersMax: number,
    /** How far the need's topic-partition is applied (and, for settings, in effect). */
    private readonly appliedOf: (need: TopicNeed) => number,
    /**
     * Called when a read starts waiting, with what it waits for; what it answers (if anything) is
     * called once the wait ends, however it ends.
     */
    private readonly onWait: (needs: readonly TopicNeed[]) => (() => void) | void = () => undefined,
  ) {}

  get size(): number {
    return this.waiting.size;
  }

  /**
   * Resolves once every need is applied; 504 `not_caught_up` after `waitMs`; with `signal`, fails
   * with its reason once it aborts (the caller went away: its slot is freed at once).
   */
  async wait(needs: readonly TopicNeed[], waitMs: number, signal?: AbortSignal): Promise<void> {
    if (this.unmet(needs) === undefined) return;
    signal?.throwIfAborted();
    if (this.waiting.size >= this.waitersMax) {
      throw unavailable('too_many_waiters', `${this.waitersMax} reads are already waiting`, {
        limit: 'waitersMax',
        max: this.waitersMax,
      });
    }
    const waited = this.onWait(needs);
    const aborted = () => {
      this.waiting.delete(waiter);
      clearTimeout(waiter.timer);
      waiter.reject(signal?.reason as Error);
    };
    let waiter!: Waiter;
    try {
      await new Promise<void>((resolve, reject) => {
        waiter = {
          needs,
          resolve,
          reject,
          timer: setTimeout(() => {
            this.waiting.delete(waiter);
            const need = this.unmet(needs);
            if (need === undefined) resolve();
            else reject(this.notCaughtUp(need, waitMs));
          }, waitMs),
        };
        this.waiting.add(waiter);
        signal?.addEventListener('abort', aborted, { once: true });
      });
    } finally {
      signal?.removeEventListener('abort', aborted);
      waited?.();
    }
  }

  /** Whether a read waits for one of these partition numbers (of any topic). */
  waitingOn(partitions: readonly number[]): boolean {
    for (const waiter of this.waiting) {
      if (waiter.needs.some((need) => partitions.includes(need.partition))) return true;
    }
    return false;
  }

  /** Called by the apply loop after a commit that moved these topic-partitions forward. */
  notify(moved: readonly TopicPartition[]): void {
    for (const waiter of this.waiting) {
      const touched = waiter.needs.some((need) =>
        moved.some((tp) => tp.partition === need.partition && tp.topic === need.topic),
      );
      if (!touched || this.unmet(waiter.needs) !== undefined) continue;
      this.waiting.delete(waiter);
      clearTimeout(waiter.timer);
      waiter.resolve();
    }
  }

  /** Fails every waiting read (the node is stopping). */
  cancelAll(error: Error): void {
    for (const waiter of this.waiting) {
      clearTimeout(waiter.timer);
      waiter.reject(error);
    }
    this.waiting.clear();
  }

  private unmet(needs: readonly TopicNeed[]): TopicNeed | undefined {
    return needs.find((need) => this.appliedOf(need) <= need.offset);
  }

  private notCaughtUp(need: TopicNeed, waitMs: number): TailbaseError {
    const { topic, partition, offset, collection } = need;
    const applied = this.appliedOf(need);
    const what =
      collection === undefined
        ? `${topic} partition ${partition} has applied up to ${applied}`
        : `${topic} partition ${partition} is in effect for ${collection} up to ${applied} (a re-index may be under way)`;
    return new TailbaseError(
      504,
      'not_caught_up',
      `${what}, offset ${offset} not applied within ${waitMs} ms`,
      { topic, partition, applied, required: offset, ...(collection ? { collection } : {}) },
    );
  }
}
