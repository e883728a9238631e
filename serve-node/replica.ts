/**
 * The two stores of one serve-node generation, applied together: a log read answer for a
 * partition becomes one LMDB transaction and one SQLite transaction, each carrying its own
 * checkpoint. A read may rely on the lower of the two checkpoints.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { decodeRecords, iterateBatches } from '../shared/batch-codec.js';
import { assert } from '../shared/assert.js';
import { DocStore, DOCS_FILE } from './doc-store.js';
import { prepareRecord, type PreparedRecord } from './prepared-record.js';
import { SearchStore, SEARCH_FILE, WAL_SUFFIX } from './search-store.js';
import { StepView } from './step-view.js';
import { currentBootId } from '../shared/boot-id.js';
import { flushAndClearMarker, markUnflushed } from './unflushed-marker.js';

export interface ApplyPart {
  partition: number;
  /** The offset the read asked for: records before it are skipped. */
  fromOffset: number;
  batches: Uint8Array;
}

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

  /** Both stores commit without fsync, behind the unflushed marker in `dir` (unflushed-marker.ts). */
  private readonly unflushed: boolean;

  constructor(readonly dir: string) {
    const bootId = currentBootId();
    this.unflushed = bootId !== null;
    mkdirSync(dir, { recursive: true });
    if (bootId !== null) markUnflushed(dir, bootId);
    this.docs = new DocStore(join(dir, DOCS_FILE), { noSync: this.unflushed });
    this.search = new SearchStore(join(dir, SEARCH_FILE), { noSync: this.unflushed });
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
   * Where the fetcher reads from: the lower checkpoint, or null (read from the log start) when a
   * store has none; the store that has one skips what it holds.
   */
  readFrom(partition: number): number | null {
    const docs = this.docs.applied(partition);
    const search = this.search.applied(partition);
    return docs === null || search === null ? null : Math.min(docs, search);
  }

  /**
   * Applies read answers of several partitions (whole batches; the first may begin before
   * `fromOffset`) in one SQLite transaction and then one LMDB transaction. Each store skips what
   * its own checkpoint of that partition already covers, so re-applying changes nothing. The
   * search store commits first and LMDB second, so LMDB is never ahead of it: the search store can
   * then read from LMDB the exact version it indexed of each document it updates. Partitions
   * never share a key, so one partition's records never touch another's.
   */
  applyMany(parts: readonly ApplyPart[]): ApplyResult[] {
    for (const { partition } of parts) this.appliedCache.delete(partition);
    const plans = parts.map((part) => this.plan(part));
    for (const plan of plans) {
      if (plan.docsFrom < plan.searchFrom && plan.nextOffset > plan.docsFrom) {
        // After a crash between the two commits: LMDB catches up to the search store first.
        const upTo = Math.min(plan.searchFrom, plan.nextOffset);
        this.docs.applyMany([
          {
            partition: plan.partition,
            records: between(plan.prepared, plan.docsFrom, upTo),
            nextOffset: upTo,
          },
        ]);
      }
    }
    const changes = plans
      .filter((plan) => plan.nextOffset > plan.searchFrom)
      .map((plan) => ({
        partition: plan.partition,
        records: between(plan.prepared, plan.searchFrom, plan.nextOffset),
        nextOffset: plan.nextOffset,
      }));
    if (changes.length > 0) {
      this.search.applyMany(changes, () => new StepView(this.docs));
      this.docs.applyMany(changes);
    }
    for (const { partition } of parts) this.appliedCache.delete(partition);
    return plans.map((plan) => ({ nextOffset: plan.nextOffset, records: plan.prepared.length }));
  }

  private plan({ partition, fromOffset, batches }: ApplyPart) {
    const prepared: PreparedRecord[] = [];
    let nextOffset = fromOffset;
    for (const { header, bytes } of iterateBatches(batches)) {
      for (const record of decodeRecords(bytes)) {
        if (record.offset >= fromOffset) prepared.push(prepareRecord(record));
      }
      nextOffset = Math.max(nextOffset, header.baseOffset + header.lastOffsetDelta + 1);
    }
    const docsFrom = this.docs.applied(partition) ?? fromOffset;
    const searchFrom = this.search.applied(partition) ?? fromOffset;
    assert(docsFrom <= searchFrom, `partition ${partition}: LMDB is ahead of the search store`);
    return { partition, prepared, nextOffset, docsFrom, searchFrom };
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

  /** Partitions either store holds a checkpoint of, in order. */
  storedPartitions(): number[] {
    const stored = [...this.docs.checkpointedPartitions(), ...this.search.checkpointedPartitions()];
    return [...new Set(stored)].sort((a, b) => a - b);
  }

  /** LMDB is copied first, so the copy's LMDB is never ahead of its search store either. */
  async backup(dir: string): Promise<void> {
    await this.docs.backup(join(dir, DOCS_FILE));
    await this.search.backup(join(dir, SEARCH_FILE));
  }

  /**
   * Closes both stores, flushing them and clearing the unflushed marker; with `discard` (stores
   * about to be deleted) nothing is flushed.
   */
  async close(options: { discard?: boolean } = {}): Promise<void> {
    this.search.close();
    await this.docs.close();
    if (this.unflushed && !options.discard) {
      flushAndClearMarker(this.dir, [DOCS_FILE, SEARCH_FILE, SEARCH_FILE + WAL_SUFFIX]);
    }
  }
}

function between(records: readonly PreparedRecord[], from: number, to: number) {
  return records.filter((record) => record.offset >= from && record.offset < to);
}
