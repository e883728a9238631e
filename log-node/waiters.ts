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
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        this.pending.delete(done);
        resolve();
      };
      const timer = setTimeout(done, waitMs);
      signal?.addEventListener('abort', done, { once: true });
      this.pending.add(done);
    });
  }

  wakeAll(): void {
    for (const done of [...this.pending]) done();
  }
}
