/**
 * The two stores of one serve-node generation, applied together: a log read answer for several
 * topic-partitions becomes one SQLite transaction and one LMDB transaction, each carrying its own
 * checkpoint of every topic-partition. A read may rely on the lower of the two checkpoints.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { decodeRecords, iterateBatches, type StoredRecord } from '../shared/batch-codec.js';
import { assert } from '../shared/assert.js';
import type { TopicPartition } from '../shared/log-api.js';
import type { ReindexStatus, StoreCheckpoints } from '../shared/serve-api.js';
import { SETTINGS_TOPIC } from '../shared/topics.js';
import { DocStore, DOCS_FILE, type DroppingSpace } from './doc-store.js';
import { prepareRecord, type PreparedRecord } from './prepared-record.js';
import { SearchStore, SEARCH_FILE, WAL_SUFFIX, type SearchStoreOptions } from './search-store.js';
import { StepView } from './step-view.js';
import { fenceViewRecords, NO_VIEW_TOPICS, type TopicFences } from './view-fence.js';
import type { FreePagesStep } from './free-pages.js';
import type { CollectionMergeStep, MergePolicy, MergeWait } from './segment-merges.js';
import { currentBootId } from '../shared/boot-id.js';
import { flushAndClearMarker, markUnflushed } from './unflushed-marker.js';

export interface ApplyPart {
  /** A collection, or the settings topic. */
  topic: string;
  partition: number;
  /** The offset the read asked for: records before it are skipped. */
  fromOffset: number;
  /** Records from this offset on are left to a later transaction (apply-slices.ts). */
  untilOffset?: number;
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
  /**
   * topic → partition → applied: every read answer reports `applied`; the stores change only
   * through applyMany(), which resets what it moves.
   */
  private readonly appliedCache = new Map<string, Map<number, number>>();
  /** collection → the documents its build (of table `tableId`) has to copy, counted once. */
  private readonly buildSizes = new Map<
    string,
    { tableId: number; sinceOffset: number; documents: number }
  >();

  /** Both stores commit without fsync, behind the unflushed marker in `dir` (unflushed-marker.ts). */
  private readonly unflushed: boolean;
  /** Whether a store has committed since the last flush(). */
  private dirty = true;
  /** Whether the search store's WAL file was emptied since the last commit flushed. */
  private walTrimmed = false;

  constructor(
    readonly dir: string,
    searchOptions?: SearchStoreOptions,
    /** Which topics are views', whose records the epoch rule fences (view-fence.ts). */
    private readonly fences: TopicFences = NO_VIEW_TOPICS,
  ) {
    const bootId = currentBootId();
    this.unflushed = bootId !== null;
    mkdirSync(dir, { recursive: true });
    if (bootId !== null) markUnflushed(dir, bootId);
    this.docs = new DocStore(join(dir, DOCS_FILE), { noSync: this.unflushed });
    this.docs.upgradeDroppingMarks();
    this.search = new SearchStore(join(dir, SEARCH_FILE), searchOptions);
    // A sync point left by an earlier process no longer has a reader keeping its pages: a new one
    // is taken before the first commit.
    this.flush();
  }

  /** The offset a read may rely on: the next offset both stores have yet to apply. */
  applied(topic: string, partition: number): number {
    let ofTopic = this.appliedCache.get(topic);
    if (ofTopic === undefined) this.appliedCache.set(topic, (ofTopic = new Map()));
    let applied = ofTopic.get(partition);
    if (applied === undefined) {
      applied = Math.min(
        this.docs.applied(topic, partition) ?? 0,
        this.search.applied(topic, partition) ?? 0,
      );
      ofTopic.set(partition, applied);
    }
    return applied;
  }

  /**
   * Where the fetcher reads from: the lower checkpoint, or null (read from the log start) when a
   * store has none; the store that has one skips what it holds.
   */
  readFrom(topic: string, partition: number): number | null {
    const docs = this.docs.applied(topic, partition);
    const search = this.search.applied(topic, partition);
    return docs === null || search === null ? null : Math.min(docs, search);
  }

  /**
   * Applies read answers of several topic-partitions (whole batches; the first may begin before
   * `fromOffset`) in one SQLite transaction and then one LMDB transaction. Each store skips what
   * its own checkpoint of that topic-partition already covers, so re-applying changes nothing. The
   * search store commits first and LMDB second, so LMDB is never ahead of it: the search store can
   * then read from LMDB the exact version it indexed of each document it updates. Partitions
   * never share a key, so one partition's records never touch another's; a settings record
   * starts a re-index of its collection, which reindexStep carries out.
   */
  applyMany(parts: readonly ApplyPart[]): ApplyResult[] {
    this.forgetApplied(parts);
    const plans = parts.map((part) => this.plan(part));
    for (const plan of plans) {
      if (plan.docsFrom < plan.searchFrom && plan.nextOffset > plan.docsFrom) {
        // After a crash between the two commits: LMDB catches up to the search store first.
        const upTo = Math.min(plan.searchFrom, plan.nextOffset);
        this.docs.applyMany([
          {
            topic: plan.topic,
            partition: plan.partition,
            records: between(plan.prepared, plan.docsFrom, upTo),
            nextOffset: upTo,
            epoch: plan.fence.epochBefore(upTo),
          },
        ]);
      }
    }
    const changes = plans
      .filter((plan) => plan.nextOffset > plan.searchFrom)
      .map((plan) => ({
        topic: plan.topic,
        partition: plan.partition,
        records: between(plan.prepared, plan.searchFrom, plan.nextOffset),
        nextOffset: plan.nextOffset,
        epoch: plan.fence.epochBefore(plan.nextOffset),
      }));
    if (changes.length > 0) {
      this.search.applyMany(changes, new StepView(this.docs));
      this.docs.applyMany(changes);
    }
    this.dirty = true;
    this.forgetApplied(parts);
    return plans.map((plan) => ({ nextOffset: plan.nextOffset, records: plan.prepared.length }));
  }

  /**
   * The first steps of dropping a collection (collection-drops.ts): LMDB's durable mark, the
   * collection's move to its next key space and its checkpoints there, then its tables and
   * checkpoints in the search store. Returns the incarnation dropped, to delete.
   */
  beginDrop(collection: string): DroppingSpace {
    this.dirty = true;
    const space = this.docs.markDropping(collection);
    this.dropTables(collection);
    return { collection, space };
  }

  /**
   * Step 2 again, for a drop a kill may have interrupted between its two transactions: safe only
   * while LMDB holds no checkpoint of the collection (no incarnation after the dropped one tailed).
   */
  dropTablesAgain(collection: string): void {
    assert(
      !this.docs.checkpointed().some((tp) => tp.topic === collection),
      `${collection}: a later incarnation is tailed`,
    );
    this.dropTables(collection);
  }

  /** Step 2 of a drop: the collection's tables and checkpoints in the search store. */
  private dropTables(collection: string): void {
    this.dirty = true;
    this.search.dropCollection(collection);
    this.appliedCache.delete(collection);
  }

  /** Deletes up to `docsMax` of a dropped incarnation's documents: the number deleted. */
  dropStep(dropped: DroppingSpace, docsMax: number): number {
    this.dirty = true;
    return this.docs.deleteSome(dropped, docsMax);
  }

  /** The last step of a drop: its mark goes. */
  endDrop(dropped: DroppingSpace): void {
    this.dirty = true;
    this.docs.unmarkDropping(dropped);
  }

  private forgetApplied(parts: readonly ApplyPart[]): void {
    for (const { topic, partition } of parts) this.appliedCache.get(topic)?.delete(partition);
  }

  private plan({ topic, partition, fromOffset, untilOffset = Infinity, batches }: ApplyPart) {
    const docsFrom = this.docs.applied(topic, partition) ?? fromOffset;
    const searchFrom = this.search.applied(topic, partition) ?? fromOffset;
    assert(docsFrom <= searchFrom, `${topic}/${partition}: LMDB is ahead of the search store`);
    const records: StoredRecord[] = [];
    let nextOffset = fromOffset;
    for (const { header, bytes } of iterateBatches(batches)) {
      for (const record of decodeRecords(bytes)) {
        // Below LMDB's checkpoint neither store takes a record: the fence starts where it does.
        if (record.offset >= Math.max(fromOffset, docsFrom) && record.offset < untilOffset) {
          records.push(record);
        }
      }
      const end = Math.min(header.baseOffset + header.lastOffsetDelta + 1, untilOffset);
      nextOffset = Math.max(nextOffset, end);
    }
    const fence = fenceViewRecords(
      records,
      this.docs.epoch(topic, partition),
      this.fences.of(topic),
    );
    if (fence.holdAt !== undefined) {
      this.fences.ask(topic);
      nextOffset = fence.holdAt;
    }
    const prepared = fence.kept.map((record) => prepareRecord(record, topic, partition));
    return { topic, partition, prepared, nextOffset, docsFrom, searchFrom, fence };
  }

  /**
   * One step of a re-index after a settings change (table-builds.ts): the next documents of a
   * collection being re-indexed, read from LMDB as they are copied into its new table, which
   * takes over after the last. A step copies at most `docsMax`, and stops after the document
   * that takes it past `msMax` (at least one a step). LMDB must hold exactly the versions the
   * search store indexed: after a crash between the two commits, a collection whose LMDB lags is
   * left until its fetcher's first answer catches it up. Null when no collection can take a step.
   */
  reindexStep(docsMax: number, msMax = Infinity): { collection: string; swapped: boolean } | null {
    const deadlineMs = performance.now() + msMax;
    const builds = this.search.reindexing();
    if (builds.length === 0) return null;
    const lagging = this.lmdbLagging();
    const build = builds.find((b) => !lagging.has(b.collection));
    if (build === undefined) return null;
    this.dirty = true;
    const docs = this.docs.documentsAfter(build.collection, build.afterKey);
    try {
      const after = this.search.copyIntoBuild(build.collection, docs, docsMax, deadlineMs);
      if (after === undefined) this.buildSizes.delete(build.collection);
      return { collection: build.collection, swapped: after === undefined };
    } finally {
      docs.return(undefined);
    }
  }

  /**
   * After every re-index step it could take, rows tables replaced by a re-index left behind
   * (retired-tables.ts), deleted for at most `msMax`: the rows deleted, or null when none are left.
   */
  retiredRowsStep(msMax = Infinity): number | null {
    const deleted = this.search.deleteRetiredRows(performance.now() + msMax);
    if (deleted !== null) this.dirty = true;
    return deleted;
  }

  /**
   * A step merging the segments of top-k lists due a merge, for at most `msMax` (one term at
   * least): the terms taken, or null when none is due. With `wholeWrittenPercent` (writes have
   * paused), whole lists too (SearchStore.mergeTopkSegments).
   */
  topkMergeStep(msMax = Infinity, wholeWrittenPercent: number | null = null): number | null {
    const step = this.search.mergeTopkSegments(performance.now() + msMax, wholeWrittenPercent);
    // A step that only checked whole lists committed nothing: the store stays idle.
    if (step?.rewrote) this.dirty = true;
    return step === null ? null : step.terms;
  }

  /**
   * With no re-index step to take and no retired rows left, a step merging a table's FTS5
   * segments once writes have paused (segment-merges.ts), for at most `msMax`.
   */
  mergeStep(msMax: number, policy: MergePolicy): CollectionMergeStep | null {
    const step = this.search.mergeSegments(performance.now() + msMax, policy);
    // An answer to wait for writes to pause committed nothing.
    if (step !== null && !('waitMs' in step)) this.dirty = true;
    return step;
  }

  /** A step giving the search store's free pages back (free-pages.ts), for at most `msMax`. */
  freePagesStep(msMax: number, policy: MergePolicy): FreePagesStep | MergeWait | null {
    const step = this.search.freePagesStep(performance.now() + msMax, policy);
    // An answer to wait for writes to pause committed nothing.
    if (step !== null && !('waitMs' in step)) this.dirty = true;
    return step;
  }

  /**
   * Makes both stores durable at their checkpoints of now, the search store first: each is then
   * what a power loss leaves at the latest (LMDB rolls back to its sync point, lmdb-sync-point.ts;
   * SQLite keeps at least its last checkpoint), and as both are flushed between two applied
   * answers, LMDB's is never ahead of the search store's. With nothing committed since the last
   * flush the stores are idle: each such flush tries a TRUNCATE checkpoint of the search store's
   * WAL (SearchStore.trimWal) until one empties it, and flushes nothing.
   */
  flush(): void {
    if (!this.dirty) {
      // A flush that finds nothing new: the stores are idle, and the WAL's bytes can go.
      if (!this.walTrimmed) this.walTrimmed = this.search.trimWal();
      return;
    }
    this.search.flush();
    this.docs.flush();
    this.dirty = false;
    this.walTrimmed = false;
  }

  /** The collections with a segment merge due, under way or waiting for writes to pause. */
  mergesDue(policy: MergePolicy): string[] {
    return this.search.mergesDue(policy);
  }

  /** How long writes must still pause for `policy`'s quiet time (SearchStore.quietWaitMs). */
  quietWaitMs(policy: MergePolicy): number {
    return this.search.quietWaitMs(policy);
  }

  /** Whether top-k list segments are left to merge (SearchStore.topkMergesDue). */
  topkMergesDue(policy: MergePolicy): boolean {
    return this.search.topkMergesDue(policy);
  }

  /** The search store's free pages left to give back to the file system. */
  freePagesLeft(): number {
    return this.search.freePagesLeft();
  }

  /**
   * The re-indexes under way, each with the documents copied and the collection's documents
   * (counted once a build, when first asked: writes meanwhile may move it).
   */
  reindexing(): ReindexStatus[] {
    return this.search.reindexing().map((build) => {
      let size = this.buildSizes.get(build.collection);
      // A build is its table and its first settings record: a table id freed by a dropped build
      // can be given to the next one.
      if (
        size === undefined ||
        size.tableId !== build.tableId ||
        size.sinceOffset !== build.sinceOffset
      ) {
        const documents = build.copied + this.docs.countAfter(build.collection, build.afterKey);
        size = { tableId: build.tableId, sinceOffset: build.sinceOffset, documents };
        this.buildSizes.set(build.collection, size);
      }
      return {
        collection: build.collection,
        settingsOffset: build.sinceOffset,
        copied: build.copied,
        documents: Math.max(size.documents, build.copied),
      };
    });
  }

  /**
   * The settings topic's offset a read of `collection` may rely on: every settings record before
   * it is in effect. A settings record stays out of effect until its re-index is done.
   */
  settingsApplied(collection: string): number {
    const applied = this.applied(SETTINGS_TOPIC, 0);
    const build = this.search.buildOf(collection);
    return build === undefined ? applied : Math.min(applied, build.sinceOffset);
  }

  /**
   * Collections with a partition whose LMDB is behind the search store: after a crash, or an
   * LMDB commit that failed (the fetcher retries the answer), which may have been LMDB's first
   * of the partition, leaving it no checkpoint at all.
   */
  private lmdbLagging(): Set<string> {
    const lagging = new Set<string>();
    for (const { topic, partition } of this.search.checkpointed()) {
      if (topic === SETTINGS_TOPIC) continue;
      const docs = this.docs.applied(topic, partition);
      if (docs === null || docs < (this.search.applied(topic, partition) as number)) {
        lagging.add(topic);
      }
    }
    return lagging;
  }

  /**
   * True when the stores cannot continue together: LMDB ahead of the search store (not written
   * by this ordering), or the search store started without LMDB (a crash between the first two
   * commits), whose start LMDB may no longer find in the log.
   */
  diverged(topic: string, partition: number): boolean {
    const docs = this.docs.applied(topic, partition);
    const search = this.search.applied(topic, partition);
    if (docs === null) return search !== null;
    return search === null || docs > search;
  }

  /** Each stored topic-partition's checkpoint in each store. */
  checkpoints(): StoreCheckpoints[] {
    return this.stored().map(({ topic, partition }) => ({
      topic,
      partition,
      docs: this.docs.applied(topic, partition),
      search: this.search.applied(topic, partition),
    }));
  }

  /** Topic-partitions either store holds a checkpoint of, by topic then partition. */
  stored(): TopicPartition[] {
    const byKey = new Map<string, TopicPartition>();
    for (const tp of [...this.docs.checkpointed(), ...this.search.checkpointed()]) {
      byKey.set(`${tp.topic}/${tp.partition}`, tp);
    }
    return [...byKey.values()].sort((a, b) =>
      a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition,
    );
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
