/**
 * Dropping a collection in place (its topic left the log), instead of replaying the whole log into
 * new stores: the node then holds what a replica rebuilt from the log without the topic holds,
 * while every other collection goes on being applied and read. One drop at a time, in steps:
 *
 * 1. LMDB, one transaction: the durable mark `dropping:<collection>` and the removal of the
 *    collection's checkpoints there. A restart finding the mark resumes the drop (step 2 on).
 *    While the mark stands, LMDB reads answer nothing of the collection (doc-store.ts).
 * 2. SQLite, one transaction: each of its tables retired (the FTS5 table dropped whole, its rows
 *    in the shared B-trees left to the background steps, retired-tables.ts), its build and its
 *    checkpoints gone. Reads hear of it at once, so no read thread answers from a dropped table.
 * 3. LMDB: its documents deleted `stepDocsMax` a transaction, the event loop running between two.
 * 4. LMDB: the mark goes.
 *
 * Each step is idempotent, so a kill at any moment leaves a mark that the next start finishes.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { assert } from '../shared/assert.js';
import { unavailable } from '../shared/errors.js';
import type { Replica } from './replica.js';

export interface CollectionDropsOptions {
  /** The stores now: a drop finds them replaced (a rebuild) when they no longer hold the topic. */
  replica(): Replica;
  /** Documents one step deletes from LMDB, in one transaction (ServeNodeLimits.dropStepDocsMax). */
  stepDocsMax: number;
  /** Settles once no rebuild is under way: a drop begins only then. */
  rebuilt(): Promise<unknown>;
  /** While a snapshot copies the stores, settles when steps may go on. */
  paused(): Promise<unknown> | null;
  stopped(): boolean;
  /** Once the collection's tables and checkpoints are gone (step 2): reads are told. */
  onTablesDropped(collection: string): void;
}

export interface DropRecord {
  collection: string;
  reason: string;
  atMs: number;
}

export class CollectionDrops {
  /** The drops asked for and not finished, by collection. */
  private readonly under = new Map<string, Promise<void>>();
  /** The last drop asked for: the next begins after it. */
  private tail: Promise<void> = Promise.resolve();
  private lastDone: DropRecord | undefined;

  constructor(private readonly options: CollectionDropsOptions) {
    assert(
      Number.isInteger(options.stepDocsMax) && options.stepDocsMax >= 1,
      `dropStepDocsMax must be at least 1, not ${options.stepDocsMax}`,
    );
  }

  /** Whether a drop of the collection is asked for or under way. */
  has(collection: string): boolean {
    return this.under.has(collection);
  }

  /** The collections being dropped, in the order asked. */
  dropping(): string[] {
    return [...this.under.keys()];
  }

  /** The last drop finished, if any. */
  last(): DropRecord | undefined {
    return this.lastDone;
  }

  /**
   * Drops the collection from the stores; settles once it is gone (the same promise for a drop
   * already asked for). Fails `stopping` when the node stops first: the mark stays, and the next
   * start finishes the drop.
   */
  drop(collection: string, reason: string): Promise<void> {
    const asked = this.under.get(collection);
    if (asked !== undefined) return asked;
    const drop = this.tail
      .then(() => this.run(collection, reason))
      .finally(() => this.under.delete(collection));
    this.under.set(collection, drop);
    this.tail = drop.catch(() => undefined);
    return drop;
  }

  /** Settles once every drop asked for has ended, however. */
  settled(): Promise<void> {
    return this.tail;
  }

  private async run(collection: string, reason: string): Promise<void> {
    await this.options.rebuilt();
    const replica = await this.stepOn();
    replica.beginDrop(collection);
    this.options.onTablesDropped(collection);
    for (;;) {
      await nextTurn();
      const current = await this.stepOn();
      // Replaced by a rebuild: the new stores replay the log, which no longer holds it.
      if (current !== replica) return;
      if (replica.dropStep(collection, this.options.stepDocsMax) < this.options.stepDocsMax) break;
    }
    replica.endDrop(collection);
    this.lastDone = { collection, reason, atMs: Date.now() };
  }

  /** The stores to take the next step on, once no snapshot holds steps back. */
  private async stepOn(): Promise<Replica> {
    for (let paused = this.options.paused(); paused; paused = this.options.paused()) {
      await paused;
    }
    if (this.options.stopped()) {
      throw unavailable('stopping', 'the serve-node is stopping; it finishes the drop at start');
    }
    return this.options.replica();
  }
}
