/**
 * The stores of one generation as a read thread sees them: its own LMDB and SQLite read handles
 * on the files the apply thread writes (replica.ts). Applied offsets are read from the same
 * LMDB snapshot the documents are, and the search store, committed before LMDB, is never behind
 * it, so the lower of the two is an offset every document read here includes.
 */
import { join } from 'node:path';
import { SETTINGS_TOPIC } from '../shared/topics.js';
import type { AppliedOffsets } from '../shared/serve-api.js';
import { searchStoreOptions, type ServeNodeLimits } from './config.js';
import { DocStore, DOCS_FILE } from './doc-store.js';
import type { ReadStores } from './reads.js';
import { SearchStore, SEARCH_FILE } from './search-store.js';

/** Collections whose applied offsets a replica keeps between commits. */
const APPLIED_KEPT_COLLECTIONS_MAX = 1024;

export class ReadReplica implements ReadStores {
  readonly docs: DocStore;
  readonly search: SearchStore;
  /** `topic/partition` → applied, as of the current snapshot; refresh() forgets it. */
  private readonly appliedCache = new Map<string, number>();
  /**
   * Each collection's applied offsets over the hosted partitions, frozen, as of the current
   * snapshot: every read answers them, and building the object on each key read of the HTTP
   * thread was work a bare handler never does (issue 28). refresh() forgets them.
   */
  private readonly appliedByCollection = new Map<string, AppliedOffsets>();

  constructor(
    readonly dir: string,
    limits: ServeNodeLimits,
  ) {
    // noSync as the writer opens it: this handle never commits.
    this.docs = new DocStore(join(dir, DOCS_FILE), { noSync: true });
    this.search = new SearchStore(join(dir, SEARCH_FILE), {
      ...searchStoreOptions(limits),
      reader: true,
    });
  }

  /** The offset a read may rely on: the next offset both stores have yet to apply. */
  applied(topic: string, partition: number): number {
    const key = `${topic}/${partition}`;
    let applied = this.appliedCache.get(key);
    if (applied === undefined) {
      applied = Math.min(
        this.docs.applied(topic, partition) ?? 0,
        this.search.applied(topic, partition) ?? 0,
      );
      this.appliedCache.set(key, applied);
    }
    return applied;
  }

  /** `applied` of each hosted partition of a collection. */
  appliedOf(collection: string, hosted: readonly number[]): AppliedOffsets {
    const kept = this.appliedByCollection.get(collection);
    if (kept !== undefined) return kept;
    const applied: AppliedOffsets = {};
    for (const partition of hosted) applied[partition] = this.applied(collection, partition);
    // Names come from requests: past this many, the kept ones are dropped.
    if (this.appliedByCollection.size >= APPLIED_KEPT_COLLECTIONS_MAX) {
      this.appliedByCollection.clear();
    }
    this.appliedByCollection.set(collection, Object.freeze(applied));
    return applied;
  }

  /** As Replica.settingsApplied: a settings record is in effect once its re-index is done. */
  settingsApplied(collection: string): number {
    const applied = this.applied(SETTINGS_TOPIC, 0);
    // The builds read after that offset: LMDB takes its snapshot at the first read after a
    // refresh, so it may hold a settings record whose re-index started after the builds the
    // refresh read, and the record would count as in effect while reads use the old settings.
    this.search.followWriter();
    const build = this.search.buildOf(collection);
    return build === undefined ? applied : Math.min(applied, build.sinceOffset);
  }

  /** Reads from the latest commits on: LMDB's snapshot moves, the search store's caches follow. */
  refresh(): void {
    this.docs.resetReadTxn();
    this.search.followWriter();
    this.appliedCache.clear();
    this.appliedByCollection.clear();
  }

  async close(): Promise<void> {
    this.search.close();
    await this.docs.close();
  }
}
