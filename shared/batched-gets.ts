/**
 * Key reads gathered into batches, as both serve transports send them (HTTP's POST /internal/docs
 * and the thread port's getMany): a message each way costs more than the read. A read the node's
 * last known applied offsets cover joins the reads made at the same time; one that may have to
 * wait, or that its batch answered `pending`, goes alone, so it holds up no other.
 */
import { CallBatcher } from './call-batcher.js';
import type {
  AppliedOffsets,
  BatchedGet,
  BatchedGetAnswer,
  GetResult,
  ServeReadOptions,
  WaitFor,
} from './serve-api.js';

export interface BatchedGetsOptions {
  batchMax: number;
  /** Batches out at once: while they are, concurrent reads gather into the next. */
  inFlightMax: number;
  sendBatch(items: BatchedGet[]): Promise<BatchedGetAnswer[]>;
  sendOne(collection: string, key: string, options: ServeReadOptions): Promise<GetResult>;
}

export class BatchedGets {
  private readonly batcher: CallBatcher<BatchedGet, BatchedGetAnswer>;
  /** The node's applied offsets in its latest answer: a read they cover needs no wait. */
  private lastApplied: AppliedOffsets = {};

  constructor(private readonly options: BatchedGetsOptions) {
    this.batcher = new CallBatcher({
      batchMax: options.batchMax,
      inFlightMax: options.inFlightMax,
      send: (items) => options.sendBatch(items),
    });
  }

  async get(collection: string, key: string, options: ServeReadOptions): Promise<GetResult> {
    const waitFor = options.waitFor ?? {};
    if (options.signal === undefined && this.covers(waitFor)) {
      const answer = await this.batcher.call({ collection, key, waitFor });
      if (answer !== 'pending') return this.saw(answer);
    }
    return this.saw(await this.options.sendOne(collection, key, options));
  }

  private covers(waitFor: WaitFor): boolean {
    return Object.entries(waitFor).every(([p, offset]) => (this.lastApplied[p] ?? 0) > offset);
  }

  private saw(result: GetResult): GetResult {
    this.lastApplied = result.applied;
    return result;
  }
}
