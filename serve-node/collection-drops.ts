/**
 * Dropping a collection in place (its topic left the log), instead of replaying the whole log into
 * new stores: the node then holds what a replica rebuilt from the log without the topic holds,
 * while every other collection goes on being applied and read. A drop goes in steps; steps 1-2 of
 * one drop at a time (the marks), and steps 3-4 of one drop at a time (the deletions), so a drop
 * answers once marked, without waiting for the documents of drops asked before it:
 *
 * 1. LMDB, one transaction: the durable mark `dropping:<collection>/<space>`, the move of the
 *    collection to its next key space (doc-store.ts) and the removal of its checkpoints there. A
 *    restart finding the mark resumes the drop (step 2 on). From then on LMDB reads of the
 *    collection read the new space, which holds nothing of the dropped incarnation.
 * 2. SQLite, one transaction: each of its tables retired (the FTS5 table dropped whole, its rows
 *    in the shared B-trees left to the background steps, retired-tables.ts), its build and its
 *    checkpoints gone. Reads hear of it at once, so no read thread answers from a dropped table.
 *    The name may be tailed again from here on: a collection created again under it is written
 *    in its own key space and tables while the dropped one's documents are deleted.
 * 3. LMDB: the dropped space's documents deleted `stepDocsMax` a transaction, the event loop
 *    running between two.
 * 4. LMDB: the mark goes.
 *
 * Each step is idempotent, so a kill at any moment leaves a mark that the next start finishes. A
 * failure in steps 3-4 is retried after a pause (bounded exponential) while the drop stays listed.
 */
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import { assert } from '../shared/assert.js';
import { unavailable } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import type { DroppingSpace } from './doc-store.js';
import type { Replica } from './replica.js';

/** The first pause before a failed deletion is tried again; it doubles up to `retryMsMax`. */
const RETRY_MS_MIN = 100;

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
  /** The longest pause before a failed deletion (steps 3-4) is tried again (the node's retryMsMax). */
  retryMsMax: number;
  logger: Logger;
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
  /** The drops asked for whose first two steps are not done, by collection. */
  private readonly marking = new Map<string, Drop>();
  /** The dropped incarnations being deleted (steps 3-4), by `collection/space`, in order asked. */
  private readonly deleting = new Map<string, { collection: string; done: Promise<void> }>();
  /** Steps 1-2 of the last drop asked for: the next drop's begin after them. */
  private marks: Promise<unknown> = Promise.resolve();
  /**
   * The last attempt at steps 3-4 queued: attempts run one at a time, in the order queued. A drop
   * that failed waits out its pause outside the queue, so a deletion that keeps failing holds up
   * no other drop's.
   */
  private deletes: Promise<unknown> = Promise.resolve();
  /** Cuts short a failed deletion's pause when the node stops. */
  private readonly stopping = new AbortController();
  private lastDone: DropRecord | undefined;

  constructor(private readonly options: CollectionDropsOptions) {
    assert(
      Number.isInteger(options.stepDocsMax) && options.stepDocsMax >= 1,
      `dropStepDocsMax must be at least 1, not ${options.stepDocsMax}`,
    );
  }

  /**
   * Whether a drop of the collection has yet to take its first two steps: until then the name is
   * not tailed again (its records would land in the space being dropped).
   */
  beingMarked(collection: string): boolean {
    return this.marking.has(collection);
  }

  /** The collections being dropped (marked, or their documents being deleted), in order asked. */
  dropping(): string[] {
    const deleting = [...this.deleting.values()].map((entry) => entry.collection);
    return [...new Set([...deleting, ...this.marking.keys()])];
  }

  /** The last drop finished, if any. */
  last(): DropRecord | undefined {
    return this.lastDone;
  }

  /**
   * Drops the collection from the stores (the same drop for one asked for and not yet marked):
   * `marked` settles once step 2 is done (reads answer nothing of it, and the name may be tailed
   * again), `done` once its documents are gone. Both fail `stopping` when the node stops first:
   * the mark stays, and the next start finishes the drop. Any other failure of steps 3-4 is
   * retried, the drop listed until it succeeds.
   */
  drop(collection: string, reason: string): Drop {
    const asked = this.marking.get(collection);
    if (asked !== undefined) return asked;
    const marked = this.marks.then(() => this.mark(collection));
    this.marks = marked.catch(() => undefined);
    const deleted = marked.then(({ dropped, replica }) => this.delete(dropped, reason, replica));
    const entry = { marked: marked.then(() => undefined), done: deleted };
    this.marking.set(collection, entry);
    // On `marked` itself, so the name is free before any callback on `entry.marked` runs.
    void marked.then(
      () => this.marking.delete(collection),
      () => this.marking.delete(collection),
    );
    return entry;
  }

  /**
   * Steps 3-4, listed until they end, however: the dropped incarnation's documents deleted from
   * `replica` (the same deletion for one under way). Also how a drop a restart interrupted is
   * resumed (its mark found at start, its step 2 done).
   */
  delete(dropped: DroppingSpace, reason: string, replica: Replica): Promise<void> {
    const id = `${dropped.collection}/${dropped.space}`;
    const existing = this.deleting.get(id);
    if (existing !== undefined) return existing.done;
    const done = this.deleteRetrying(dropped, reason, replica).finally(() =>
      this.deleting.delete(id),
    );
    this.deleting.set(id, { collection: dropped.collection, done });
    return done;
  }

  /** The node stops: a failed deletion's pause ends now, and its next attempt fails `stopping`. */
  stop(): void {
    this.stopping.abort();
  }

  /** Settles once every drop asked for has ended, however. */
  async settled(): Promise<void> {
    const drops = [...this.marking.values(), ...this.deleting.values()];
    await Promise.allSettled(drops.map((drop) => drop.done));
  }

  /** Steps 1-2: the incarnation dropped, and the stores the mark is on. */
  private async mark(collection: string): Promise<{ dropped: DroppingSpace; replica: Replica }> {
    await this.options.rebuilt();
    const replica = await this.stepOn();
    const dropped = replica.beginDrop(collection);
    this.options.onTablesDropped(collection);
    return { dropped, replica };
  }

  /** Steps 3-4, tried again after a failure until they succeed or the node stops. */
  private async deleteRetrying(dropped: DroppingSpace, reason: string, replica: Replica) {
    const { collection } = dropped;
    for (let retryMs = RETRY_MS_MIN; ; retryMs = Math.min(retryMs * 2, this.options.retryMsMax)) {
      const attempt = this.deletes.then(() => this.deleteSteps(dropped, reason, replica));
      this.deletes = attempt.catch(() => undefined);
      try {
        await attempt;
        return;
      } catch (error) {
        if (this.options.stopped()) throw error;
        this.options.logger.error(
          { err: error, collection, retryMs },
          "deleting a dropped collection's documents failed; retrying",
        );
        await sleep(retryMs, undefined, { signal: this.stopping.signal }).catch(() => undefined);
      }
    }
  }

  private async deleteSteps(dropped: DroppingSpace, reason: string, replica: Replica) {
    for (;;) {
      await nextTurn();
      const current = await this.stepOn();
      // Replaced by a rebuild: the new stores replay the log, which no longer holds it.
      if (current !== replica) return;
      if (replica.dropStep(dropped, this.options.stepDocsMax) < this.options.stepDocsMax) break;
    }
    replica.endDrop(dropped);
    this.lastDone = { collection: dropped.collection, reason, atMs: Date.now() };
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
