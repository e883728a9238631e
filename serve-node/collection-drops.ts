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

/** A drop under way: its first two steps done (`marked`), and all of it (`done`). */
export interface Drop {
  marked: Promise<void>;
  done: Promise<void>;
}

export interface DropRecord {
  collection: string;
  reason: string;
  atMs: number;
}

export class CollectionDrops {
  /** The drops asked for and not finished, by collection. */
  private readonly under = new Map<string, Drop>();
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
   * Drops the collection from the stores (the same drop for one already asked for): `marked`
   * settles once step 2 is done (reads answer nothing of it), `done` once it is gone. Both fail
   * `stopping` when the node stops first: the mark stays, and the next start finishes the drop.
   */
  drop(collection: string, reason: string): Drop {
    const asked = this.under.get(collection);
    if (asked !== undefined) return asked;
    let onMarked = () => {};
    const marked = new Promise<void>((resolve) => (onMarked = resolve));
    const done = this.tail
      .then(() => this.run(collection, reason, onMarked))
      .finally(() => this.under.delete(collection));
    const entry = { marked: Promise.race([marked, done]), done };
    this.under.set(collection, entry);
    this.tail = done.catch(() => undefined);
    return entry;
  }

  /** Settles once every drop asked for has ended, however. */
  settled(): Promise<void> {
    return this.tail;
  }

  private async run(collection: string, reason: string, onMarked: () => void): Promise<void> {
    await this.options.rebuilt();
    const replica = await this.stepOn();
    replica.beginDrop(collection);
    this.options.onTablesDropped(collection);
    onMarked();
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
