/**
 * Coalesces concurrent calls into batched calls: what arrives while earlier batches are out goes
 * in the next one. A batch leaves once the current turn of the event loop is over (so the requests
 * parsed in one turn travel together), at most `inFlightMax` batches are out at once, and a batch
 * holds at most `batchMax` items. An idle caller pays no wait: its call leaves in the next turn.
 */
export interface CallBatcherOptions<Item, Answer> {
  batchMax: number;
  inFlightMax: number;
  /** With `weigh`: a batch ends before the item that would take its weight past this. */
  batchWeightMax?: number;
  weigh?(item: Item): number;
  /** Answers the items, one answer per item in the same order. */
  send(items: Item[]): Promise<Answer[]>;
}

interface Queued<Item, Answer> {
  item: Item;
  resolve(answer: Answer): void;
  reject(error: unknown): void;
}

export class CallBatcher<Item, Answer> {
  private queue: Queued<Item, Answer>[] = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(private readonly options: CallBatcherOptions<Item, Answer>) {}

  call(item: Item): Promise<Answer> {
    return new Promise<Answer>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.queue.length === 0 || this.inFlight >= this.options.inFlightMax) {
      return;
    }
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      while (this.queue.length > 0 && this.inFlight < this.options.inFlightMax) {
        void this.send(this.queue.splice(0, this.nextBatchLength()));
      }
    });
  }

  /** At least one item, at most batchMax, and within batchWeightMax. */
  private nextBatchLength(): number {
    const { batchMax, batchWeightMax = Infinity, weigh } = this.options;
    const limit = Math.min(batchMax, this.queue.length);
    if (weigh === undefined) return limit;
    let length = 1;
    let weight = weigh(this.queue[0].item);
    while (length < limit) {
      weight += weigh(this.queue[length].item);
      if (weight > batchWeightMax) break;
      length += 1;
    }
    return length;
  }

  private async send(batch: Queued<Item, Answer>[]): Promise<void> {
    this.inFlight += 1;
    try {
      const answers = await this.options.send(batch.map((queued) => queued.item));
      batch.forEach((queued, i) => queued.resolve(answers[i]));
    } catch (error) {
      for (const queued of batch) queued.reject(error);
    } finally {
      this.inFlight -= 1;
      this.schedule();
    }
  }
}
