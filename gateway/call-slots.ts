/**
 * At most `max` calls running at once; the others wait their turn, first come first served. For
 * work whose cost is memory held while it runs (a read of up to a bound of bytes), so the bound
 * times `max` is what it may hold.
 */
export class CallSlots {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly max: number) {
    if (!Number.isSafeInteger(max) || max < 1) {
      throw new Error(`call slots must be a whole number of at least 1, not ${max}`);
    }
  }

  async run<T>(call: () => Promise<T>): Promise<T> {
    if (this.running >= this.max) {
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.running += 1;
    }
    try {
      return await call();
    } finally {
      // The slot passes straight to the next waiter: `running` counts it still.
      const next = this.waiting.shift();
      if (next === undefined) this.running -= 1;
      else next();
    }
  }
}
