/**
 * Merging a collection table's FTS5 segments into one once its writes have paused. Every apply
 * transaction leaves FTS5 a new segment, and FTS5's automerge keeps up to three a level, so after
 * a bulk load a table holds a dozen or more; a query seeks the term in each and walks the doclist
 * of each. On the filters bench's store (13,484 documents, 14 segments), one segment took the SQL
 * of its 200 filtered searches from 201 to 140-150 us a query, and of a search of a term in 8,896
 * documents from 681 to 451 us. Merging is FTS5's own incremental 'merge' command, with a
 * negative page count (merge whatever the levels, the incremental form of 'optimize'), a few
 * pages a command, in steps of bounded time, so reads and applied answers go on between them.
 *
 * When: a table is due once the documents written to it since its last merge reach a share of
 * the documents it held then (every table is due once after opening, as no count survives a
 * restart), and its merge starts when no document has been written for a quiet time. A merge
 * rewrites the whole index, so the share bounds the cost a write: a trickle of writes with pauses
 * between them merges once a tenth of the collection, not at every pause.
 */
import type Database from 'better-sqlite3';
import type { Statement } from 'better-sqlite3';
import type { FtsTable } from './fts-table.js';
import { writeStamp } from './write-stamp.js';

/**
 * Leaf pages a merge command writes at most. A step checks its deadline between commands, so a
 * command bounds how far past it a step runs: on the filters bench's store a command of 32 pages
 * took up to 28.7 ms, so one of 16 about half that.
 */
const MERGE_PAGES_A_COMMAND = 16;
/**
 * FTS5's documented test of a merge command: total_changes() moves by less than this when it
 * found nothing left to merge.
 */
const MERGE_DID_WORK_CHANGES = 2;

export interface MergePolicy {
  /** No document written to the store for this long before a merge step. */
  quietMs: number;
  /** Written documents, as a percentage of the table's documents at its last merge, make it due. */
  writtenPercent: number;
}

/** What a merge step did: merged part of a table, or waited for writes to pause. */
export type MergeStep = { merged: { tableId: number; finished: boolean } } | MergeWait;
/** The same, naming the table's collection. */
export type CollectionMergeStep = { merged: { collection: string; finished: boolean } } | MergeWait;
/** How long writes must still pause before a merge due may start. */
export interface MergeWait {
  waitMs: number;
}

export class SegmentMerges {
  /** table id → documents written since its last merge (or since the store opened). */
  private readonly written = new Map<number, number>();
  /** table id → its documents when its last merge finished; 0 until one has. */
  private readonly documentsAtMerge = new Map<number, number>();
  private lastWriteMs = -Infinity;
  /** SQLite's total_changes(): FTS5's test of whether a merge command did any work. */
  private readonly changes: () => number;
  private readonly documents: Statement;

  constructor(
    private readonly db: Database.Database,
    tableIds: readonly number[],
  ) {
    this.changes = writeStamp(db);
    this.documents = db.prepare('SELECT count(*) FROM doc_rows WHERE table_id = ?').pluck();
    for (const id of tableIds) this.written.set(id, 1);
  }

  /** A document was written to (or removed from) the table. */
  wrote(tableId: number): void {
    this.written.set(tableId, (this.written.get(tableId) ?? 0) + 1);
    this.lastWriteMs = performance.now();
  }

  /** The table was dropped: nothing of it is left to merge. */
  dropped(tableId: number): void {
    this.written.delete(tableId);
    this.documentsAtMerge.delete(tableId);
  }

  /** The tables due a merge, whether or not writes have paused. */
  due(policy: MergePolicy): number[] {
    return [...this.written.keys()].filter((id) => this.isDue(id, policy));
  }

  /**
   * Merges the first table due, in one transaction, until `deadlineMs` (performance.now()) has
   * passed (one command at least) or nothing is left to merge. Null when no table is due; the
   * time left to wait when one is but writes have not paused for the policy's quiet time.
   */
  step(
    tableOf: (id: number) => FtsTable,
    deadlineMs: number,
    policy: MergePolicy,
  ): MergeStep | null {
    const tableId = this.due(policy)[0];
    if (tableId === undefined) return null;
    const waitMs = this.quietWaitMs(policy);
    if (waitMs > 0) return { waitMs };
    const { merge } = tableOf(tableId);
    const finished = this.db.transaction(() => {
      do {
        const before = this.changes();
        merge.run(-MERGE_PAGES_A_COMMAND);
        if (this.changes() - before < MERGE_DID_WORK_CHANGES) return true;
      } while (performance.now() < deadlineMs);
      return false;
    })();
    if (finished) {
      this.written.delete(tableId);
      this.documentsAtMerge.set(tableId, this.documents.get(tableId) as number);
    }
    return { merged: { tableId, finished } };
  }

  /** How long writes must still pause to have paused for the policy's quiet time; 0: they have. */
  quietWaitMs(policy: MergePolicy): number {
    return Math.max(0, policy.quietMs - (performance.now() - this.lastWriteMs));
  }

  private isDue(tableId: number, policy: MergePolicy): boolean {
    const written = this.written.get(tableId) ?? 0;
    const atMerge = this.documentsAtMerge.get(tableId) ?? 0;
    return written > 0 && written >= (atMerge * policy.writtenPercent) / 100;
  }
}
