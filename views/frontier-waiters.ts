/**
 * Read-your-writes through a view: reads that carry source offsets wait here until the view's
 * published frontiers pass them, then take the view topic's offsets that cover those frontiers
 * (the last offset the processor appended per view partition, over all its rounds), which the
 * gateway then waits for on the serve-nodes as for any token.
 */
import { TailbaseError, unavailable } from '../shared/errors.js';

interface Waiter {
  needs: ReadonlyMap<number, number>;
  resolve: (ends: Map<number, number>) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

export class FrontierWaiters {
  private frontiers = new Map<number, number>();
  private readonly appended = new Map<number, number>();
  private readonly waitingReads = new Set<Waiter>();

  constructor(
    private readonly view: string,
    private readonly waitersMax: number,
  ) {}

  /** The published frontier of a source partition: processed, and its output acknowledged. */
  frontier(partition: number): number {
    return this.frontiers.get(partition) ?? 0;
  }

  /** Reads waiting now. */
  get waiting(): number {
    return this.waitingReads.size;
  }

  /** The view offsets that cover the published frontiers (partition → last offset appended). */
  ends(): Map<number, number> {
    return new Map(this.appended);
  }

  /** A processed round: its frontiers (next offsets), and the view offsets it appended. */
  publish(frontiers: ReadonlyMap<number, number>, appended: ReadonlyMap<number, number>): void {
    this.frontiers = new Map(frontiers);
    for (const [partition, offset] of appended) {
      this.appended.set(partition, Math.max(offset, this.appended.get(partition) ?? -1));
    }
    for (const waiter of this.waitingReads) {
      if (this.covers(waiter.needs)) this.settle(waiter).resolve(this.ends());
    }
  }

  wait(needs: ReadonlyMap<number, number>, waitMs: number): Promise<Map<number, number>> {
    if (this.covers(needs)) return Promise.resolve(this.ends());
    if (this.waitingReads.size >= this.waitersMax) {
      return Promise.reject(
        unavailable(
          'too_many_waiters',
          `${this.waitersMax} reads already wait on view ${this.view}`,
          {
            view: this.view,
          },
        ),
      );
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        needs,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.settle(waiter).reject(this.behind(needs, waitMs));
        }, waitMs),
      };
      this.waitingReads.add(waiter);
    });
  }

  closeAll(): void {
    for (const waiter of this.waitingReads) {
      this.settle(waiter).reject(
        unavailable('view_processor_stopped', `the processor of view ${this.view} stopped`, {
          view: this.view,
        }),
      );
    }
  }

  private covers(needs: ReadonlyMap<number, number>): boolean {
    for (const [partition, offset] of needs) {
      if ((this.frontiers.get(partition) ?? 0) <= offset) return false;
    }
    return true;
  }

  private settle(waiter: Waiter): Waiter {
    clearTimeout(waiter.timer);
    this.waitingReads.delete(waiter);
    return waiter;
  }

  private behind(needs: ReadonlyMap<number, number>, waitMs: number): TailbaseError {
    const behind = [...needs]
      .filter(([partition, offset]) => (this.frontiers.get(partition) ?? 0) <= offset)
      .map(([partition, offset]) => ({
        partition,
        required: offset,
        frontier: this.frontiers.get(partition) ?? 0,
      }));
    return new TailbaseError(
      504,
      'not_caught_up',
      `view ${this.view} did not process the token's source offsets within ${waitMs} ms`,
      { view: this.view, behind },
    );
  }
}
