/**
 * The two stores of one serve-node generation, applied together: a log read answer for a
 * partition becomes one LMDB transaction and one SQLite transaction, each carrying its own
 * checkpoint. A read may rely on the lower of the two checkpoints.
 */
import { join } from 'node:path';
import { decodeRecords, iterateBatches } from '../shared/batch-codec.js';
import { assert } from '../shared/assert.js';
import { DocStore, DOCS_FILE } from './doc-store.js';
import { prepareRecord, type PreparedRecord } from './prepared-record.js';
import { SearchStore, SEARCH_FILE } from './search-store.js';
import { StepView } from './step-view.js';

export interface ApplyResult {
  /** The next offset to read. */
  nextOffset: number;
  /** Records whose offset was at or past the read offset (whether or not a store had them). */
  records: number;
}

export class Replica {
  readonly docs: DocStore;
  readonly search: SearchStore;
  /** Every read answer reports `applied`; the stores change only through apply(), which resets it. */
  private readonly appliedCache = new Map<number, number>();

  constructor(readonly dir: string) {
    this.docs = new DocStore(join(dir, DOCS_FILE));
    this.search = new SearchStore(join(dir, SEARCH_FILE));
  }

  /** The offset a read may rely on: the next offset both stores have yet to apply. */
  applied(partition: number): number {
    let applied = this.appliedCache.get(partition);
    if (applied === undefined) {
      applied = Math.min(this.docs.applied(partition) ?? 0, this.search.applied(partition) ?? 0);
      this.appliedCache.set(partition, applied);
    }
    return applied;
  }

  /**
   * Where the tailer reads from: the lower checkpoint, or null (read from the log start) when a
   * store has none; the store that has one skips what it holds.
   */
  readFrom(partition: number): number | null {
    const docs = this.docs.applied(partition);
    const search = this.search.applied(partition);
    return docs === null || search === null ? null : Math.min(docs, search);
  }

  /**
   * Applies a read answer (whole batches; the first may begin before `fromOffset`). Each store
   * skips what its own checkpoint already covers, so re-applying changes nothing. The search store
   * commits first and LMDB second, so LMDB is never ahead of it: the search store can then read
   * from LMDB the exact version it indexed of each document it updates. The caller awaits each
   * apply of a partition before the next, so that read of LMDB sees the previous commit.
   */
  async apply(partition: number, fromOffset: number, batches: Uint8Array): Promise<ApplyResult> {
    this.appliedCache.delete(partition);
    const prepared: PreparedRecord[] = [];
    let nextOffset = fromOffset;
    for (const { header, bytes } of iterateBatches(batches)) {
      for (const record of decodeRecords(bytes)) {
        if (record.offset >= fromOffset) prepared.push(prepareRecord(record));
      }
      nextOffset = Math.max(nextOffset, header.baseOffset + header.lastOffsetDelta + 1);
    }
    let docsFrom = this.docs.applied(partition) ?? fromOffset;
    const searchFrom = this.search.applied(partition) ?? fromOffset;
    assert(docsFrom <= searchFrom, `partition ${partition}: LMDB is ahead of the search store`);
    const between = (from: number, to: number) =>
      prepared.filter((record) => record.offset >= from && record.offset < to);
    if (docsFrom < searchFrom && nextOffset > docsFrom) {
      // After a crash between the two commits: LMDB catches up to the search store first.
      const upTo = Math.min(searchFrom, nextOffset);
      await this.docs.apply(partition, between(docsFrom, upTo), upTo);
      docsFrom = upTo;
    }
    if (nextOffset > searchFrom) {
      const records = between(searchFrom, nextOffset);
      this.search.apply(partition, records, nextOffset, new StepView(this.docs));
      await this.docs.apply(partition, records, nextOffset);
    }
    this.appliedCache.delete(partition);
    return { nextOffset, records: prepared.length };
  }

  /**
   * True when the stores cannot continue together: LMDB ahead of the search store (not written
   * by this ordering), or the search store started without LMDB (a crash between the first two
   * commits), whose start LMDB may no longer find in the log.
   */
  diverged(partition: number): boolean {
    const docs = this.docs.applied(partition);
    const search = this.search.applied(partition);
    if (docs === null) return search !== null;
    return search === null || docs > search;
  }

  /** LMDB is copied first, so the copy's LMDB is never ahead of its search store either. */
  async backup(dir: string): Promise<void> {
    await this.docs.backup(join(dir, DOCS_FILE));
    await this.search.backup(join(dir, SEARCH_FILE));
  }

  async close(): Promise<void> {
    this.search.close();
    await this.docs.close();
  }
}
