/**
 * Long-poll waiters of one partition: woken together when an append becomes durable, or when
 * their wait or their request ends.
 */
export class Waiters {
  private readonly pending = new Set<() => void>();

  get count(): number {
    return this.pending.size;
  }

  wait(waitMs: number, signal?: AbortSignal): Promise<void> {
    return waitForAny([this], waitMs, signal);
  }

  wakeAll(): void {
    for (const done of [...this.pending]) done();
  }

  add(done: () => void): void {
    this.pending.add(done);
  }

  remove(done: () => void): void {
    this.pending.delete(done);
  }
}

/**
 * One wait on several partitions (a fetch's): it ends at the first append to any of them, at
 * `waitMs`, or when `signal` aborts, with one timer and one abort listener however many
 * partitions it spans.
 */
export function waitForAny(
  partitions: readonly Waiters[],
  waitMs: number,
  signal?: AbortSignal,
): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      for (const waiters of partitions) waiters.remove(done);
      resolve();
    };
    const timer = setTimeout(done, waitMs);
    if (signal?.aborted) return done();
    signal?.addEventListener('abort', done, { once: true });
    for (const waiters of partitions) waiters.add(done);
  });
}
