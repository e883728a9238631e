/**
 * The document store: one LMDB environment (a file, docs.mdb) holding the latest version of every
 * document of the hosted partitions, keyed by collection and key in UTF-8 byte order, and each
 * tailed topic-partition's applied offset, written in the same transaction as the documents it
 * covers. Layout (README.md): docs db key = collection, 0x00, key; value = offset (float64 BE),
 * partition (uint32 BE), the document's JSON. meta db: `applied:<topic>/<p>` → next unapplied
 * offset, `clusterId` → the log cluster the documents came from, `dropping:<collection>` → true
 * while a dropped collection's documents are being deleted (collection-drops.ts),
 * `incarnation:<collection>` → the incarnation of the collection the documents are of (absent: 0).
 */
import { open, type Database, type RootDatabase, type Transaction } from 'lmdb';
import { assert } from '../shared/assert.js';
import type { TopicPartition } from '../shared/log-api.js';
import { SETTINGS_TOPIC } from '../shared/topics.js';
import { recordSyncPoint } from './lmdb-sync-point.js';
import type { PartitionChange } from './prepared-record.js';

export const DOCS_FILE = 'docs.mdb';
const VALUE_HEADER_BYTES = 12;

export interface StoredDoc {
  key: string;
  /** The document's JSON text. */
  json: string;
  offset: number;
  partition: number;
}

export interface KeyRange {
  /** Inclusive lower bound. */
  start?: string;
  /** Exclusive upper bound. */
  end?: string;
  prefix?: string;
  /** Exclusive lower bound: the last key of the previous page. */
  after?: string;
}

/** The page counts lmdb-js's getStats() gives of one database (LMDB's MDB_stat). */
interface LmdbDbStats {
  treeBranchPageCount: number;
  treeLeafPageCount: number;
  overflowPages: number;
  entryCount: number;
}

export class DocStore {
  private readonly env: RootDatabase;
  private readonly docs: Database<Buffer, Buffer>;
  private readonly meta: Database<unknown, string>;
  private readonly pageBytes: number;
  /** Held on the snapshot of the last sync point, so no commit reuses its pages (lmdb-sync-point.ts). */
  private syncPointReader: Transaction | null = null;

  /**
   * `noSync`: commits without fsync, made power-safe by periodic sync points (flush(),
   * lmdb-sync-point.ts): asynchronous commits through lmdb-js's write thread took 2-5 ms at the
   * median and 10-21 ms at p99 per applied answer, most of a write's time to visibility, and
   * `overlappingSync` with synchronous commits fsyncs inside each commit (2.6 ms a commit of 10
   * documents here, against 0.16 ms with `noSync`).
   */
  constructor(
    private readonly path: string,
    options: { noSync: boolean },
  ) {
    this.env = open({ path, compression: false, noSync: options.noSync });
    this.pageBytes = (this.env.getStats() as { pageSize: number }).pageSize;
    this.docs = this.env.openDB<Buffer, Buffer>({
      name: 'docs',
      keyEncoding: 'binary',
      encoding: 'binary',
    });
    this.meta = this.env.openDB<unknown, string>({ name: 'meta', encoding: 'json' });
  }

  /**
   * The collections marked as being dropped in this thread's snapshot, read once a snapshot: their
   * checkpoints are gone but their documents are deleted over many steps, and no read may see
   * what is left of them (nor mistake it for a collection created again under the name).
   */
  private droppingSeen: Set<string> | null = null;

  private dropping(collection: string): boolean {
    this.droppingSeen ??= new Set(this.droppingCollections());
    return this.droppingSeen.has(collection);
  }

  /** The topic-partition's next unapplied offset, or null when nothing of it was ever applied. */
  applied(topic: string, partition: number): number | null {
    const value = this.meta.get(appliedKey(topic, partition));
    return typeof value === 'number' ? value : null;
  }

  /** Every topic-partition with a checkpoint here. */
  checkpointed(): TopicPartition[] {
    const keys = this.meta.getKeys({ start: APPLIED_PREFIX, end: 'applied;' });
    return [...keys].map((key) => {
      const slash = key.lastIndexOf('/');
      return {
        topic: key.slice(APPLIED_PREFIX.length, slash),
        partition: Number(key.slice(slash + 1)),
      };
    });
  }

  clusterId(): string | null {
    const value = this.meta.get('clusterId');
    return typeof value === 'string' ? value : null;
  }

  setClusterId(clusterId: string): void {
    this.meta.putSync('clusterId', clusterId);
  }

  /**
   * Applies records of several topic-partitions (each already filtered to offsets >= its
   * checkpoint) in one transaction, committed before it returns and visible to reads at once.
   * Settings records are the search store's alone: here only their checkpoint moves.
   */
  applyMany(changes: readonly PartitionChange[]): void {
    this.env.transactionSync(() => {
      for (const { topic, partition, records, nextOffset, epoch } of changes) {
        if (topic !== SETTINGS_TOPIC) {
          for (const record of records) {
            const key = docKey(topic, record.key);
            if (record.json === null) {
              this.docs.remove(key);
            } else {
              this.docs.put(key, encodeValue(record.offset, partition, record.json));
            }
          }
        }
        this.meta.put(appliedKey(topic, partition), nextOffset);
        if (epoch !== undefined && epoch >= 0) this.meta.put(epochKey(topic, partition), epoch);
      }
    });
  }

  /** The greatest view epoch applied of a topic-partition (shared/view-epoch.ts); −1: none. */
  epoch(topic: string, partition: number): number {
    const value = this.meta.get(epochKey(topic, partition));
    return typeof value === 'number' ? value : -1;
  }

  /**
   * The first step of dropping a collection, in one transaction: the durable mark that the drop
   * is under way (a restart resumes it) and the removal of the collection's checkpoints and
   * view epochs, so no read relies on the documents it still holds and a view declared again
   * under the name starts below no fence.
   */
  markDropping(collection: string): void {
    this.env.transactionSync(() => {
      this.meta.put(DROPPING_PREFIX + collection, true);
      this.meta.remove(INCARNATION_PREFIX + collection);
      // Its checkpoints' keys only ('0' follows '/'), not every topic's.
      const start = `${APPLIED_PREFIX}${collection}/`;
      const keys = [...this.meta.getKeys({ start, end: `${APPLIED_PREFIX}${collection}0` })];
      for (const key of keys) {
        const partition = key.slice(start.length);
        // A topic whose name goes on past a slash is another topic.
        if (!/^\d+$/.test(partition)) continue;
        this.meta.remove(key);
        this.meta.remove(epochKey(collection, Number(partition)));
      }
    });
    this.droppingSeen = null;
  }

  /**
   * The incarnation of the collection (how many times its name was dropped before it) whose
   * documents the stores hold or will: 0 until set.
   */
  incarnation(collection: string): number {
    const value = this.meta.get(INCARNATION_PREFIX + collection);
    return typeof value === 'number' ? value : 0;
  }

  setIncarnation(collection: string, incarnation: number): void {
    this.meta.putSync(INCARNATION_PREFIX + collection, incarnation);
  }

  /** The collections marked as being dropped (markDropping), by name. */
  droppingCollections(): string[] {
    const keys = this.meta.getKeys({ start: DROPPING_PREFIX, end: 'dropping;' });
    return [...keys].map((key) => key.slice(DROPPING_PREFIX.length));
  }

  /**
   * Deletes up to `docsMax` documents of a collection in one transaction: the number deleted
   * (fewer than `docsMax` once none are left).
   */
  deleteSome(collection: string, docsMax: number): number {
    const bounds = keyBounds(collection, {});
    if (bounds === null) return 0;
    let deleted = 0;
    this.env.transactionSync(() => {
      // Copied out before any is removed: the cursor's key buffers are LMDB's.
      const keys = [...this.docs.getKeys({ ...bounds, limit: docsMax })].map((key) =>
        Buffer.from(key),
      );
      for (const key of keys) this.docs.remove(key);
      deleted = keys.length;
    });
    return deleted;
  }

  /** The last step of a drop: the collection's mark goes once its documents have. */
  unmarkDropping(collection: string): void {
    this.env.transactionSync(() => {
      this.meta.remove(DROPPING_PREFIX + collection);
    });
    this.droppingSeen = null;
  }

  /**
   * Moves this thread's read snapshot to the latest commit: a thread that did not write keeps
   * reading the snapshot of its first read until it calls this (lmdb-js 3.5), however many
   * commits another thread made since.
   */
  resetReadTxn(): void {
    this.env.resetReadTxn();
    this.droppingSeen = null;
  }

  /** Nothing of a collection being dropped, as with scan and countDocuments. */
  get(collection: string, key: string): StoredDoc | undefined {
    if (this.dropping(collection)) return undefined;
    const value = this.docs.get(docKey(collection, key));
    return value === undefined ? undefined : decodeValue(key, value);
  }

  /**
   * Up to `limit` documents in key order, and whether more follow; with `partitions`, only the
   * documents of those partitions. The page also ends (with more) before the document that would
   * take its stored bytes past `bytesMax`, but holds at least one.
   */
  scan(
    collection: string,
    range: KeyRange,
    limit: number,
    partitions?: ReadonlySet<number>,
    bytesMax = Infinity,
  ): { items: StoredDoc[]; more: boolean } {
    const bounds = keyBounds(collection, range);
    if (bounds === null || this.dropping(collection)) return { items: [], more: false };
    const prefixBytes = Buffer.byteLength(collection) + 1;
    const items: StoredDoc[] = [];
    let bytes = 0;
    const rangeLimit = partitions === undefined ? limit + 1 : undefined;
    for (const { key, value } of this.docs.getRange({ ...bounds, limit: rangeLimit })) {
      if (partitions !== undefined && !partitions.has(value.readUInt32BE(8))) continue;
      // At least one document a page, however large, so a scan always moves on.
      const full = items.length === limit || (items.length > 0 && bytes + value.length > bytesMax);
      if (full) return { items, more: true };
      bytes += value.length;
      items.push(decodeValue(key.subarray(prefixBytes).toString('utf8'), value));
    }
    return { items, more: false };
  }

  /**
   * The documents of a collection in key order after `afterKey` (from the first when null),
   * whatever their partition, each read as it is asked for: a step of a re-index after a settings
   * change takes as many as its time allows. Ending the iteration early (`return()`, or a `break`
   * out of a for-of) closes LMDB's cursor.
   */
  *documentsAfter(collection: string, afterKey: string | null): Generator<StoredDoc> {
    const bounds = keyBounds(collection, afterKey === null ? {} : { after: afterKey });
    if (bounds === null) return;
    const prefixBytes = Buffer.byteLength(collection) + 1;
    for (const { key, value } of this.docs.getRange(bounds)) {
      yield decodeValue(key.subarray(prefixBytes).toString('utf8'), value);
    }
  }

  /** The number of documents of a collection after `afterKey` (all when null). */
  countAfter(collection: string, afterKey: string | null): number {
    const bounds = keyBounds(collection, afterKey === null ? {} : { after: afterKey });
    return bounds === null ? 0 : this.docs.getKeysCount(bounds);
  }

  /**
   * The documents of a collection, or of its `partitions` only: the key count when every one is
   * wanted; otherwise each value's partition field is read (values are read, so this costs more,
   * but neither a key nor a document is decoded).
   */
  countDocuments(collection: string, partitions: ReadonlySet<number> | null): number {
    if (this.dropping(collection)) return 0;
    if (partitions === null) return this.countAfter(collection, null);
    const bounds = keyBounds(collection, {});
    if (bounds === null) return 0;
    let count = 0;
    for (const { value } of this.docs.getRange(bounds)) {
      if (partitions.has(partitionOf(value))) count++;
    }
    return count;
  }

  /**
   * Each collection's share of the docs database's pages (branch, leaf and overflow), in
   * proportion to its documents: the collections share one B-tree, so no page count is one
   * collection's own. A seek and a key count a collection, as countDocuments does.
   */
  collectionBytes(): Map<string, number> {
    const stats = this.docs.getStats() as LmdbDbStats;
    const pages = stats.treeBranchPageCount + stats.treeLeafPageCount + stats.overflowPages;
    const bytes = new Map<string, number>();
    if (stats.entryCount === 0) return bytes;
    let start = Buffer.alloc(0);
    for (;;) {
      const [first] = this.docs.getKeys({ start, limit: 1 });
      if (first === undefined) return bytes;
      const separator = first.indexOf(0);
      // Without it the next start would not pass this key, and the walk would not end.
      assert(separator > 0, 'a documents key is collection, 0x00, key');
      const collection = first.subarray(0, separator).toString('utf8');
      const count = this.countAfter(collection, null);
      bytes.set(collection, Math.round((pages * this.pageBytes * count) / stats.entryCount));
      start = Buffer.from(`${collection}\u0001`, 'utf8');
    }
  }

  /** The size of LMDB's memory map of the file now (it grows with the file). */
  mapBytes(): number {
    return (this.env.getStats() as { mapSize: number }).mapSize;
  }

  /** Writes a consistent copy (one read transaction) to `path`. */
  async backup(path: string): Promise<void> {
    await this.env.backup(path, false);
  }

  /**
   * Makes every commit so far durable and the point a power loss rolls back to (a sync point,
   * lmdb-sync-point.ts). The reader on the previous sync point is released only once the new one
   * is on disk.
   */
  flush(): void {
    recordSyncPoint(this.path, this.pageBytes);
    const previous = this.syncPointReader;
    this.syncPointReader = this.env.useReadTransaction();
    previous?.done();
  }

  async close(): Promise<void> {
    this.syncPointReader?.done();
    this.syncPointReader = null;
    await this.env.close();
  }
}

const APPLIED_PREFIX = 'applied:';
const DROPPING_PREFIX = 'dropping:';
const INCARNATION_PREFIX = 'incarnation:';

/** Beside the checkpoint, in its transaction: the view epoch it covers (view-fence.ts). */
function epochKey(topic: string, partition: number): string {
  return `epoch:${topic}/${partition}`;
}

function appliedKey(topic: string, partition: number): string {
  return `${APPLIED_PREFIX}${topic}/${partition}`;
}

function docKey(collection: string, key: string): Buffer {
  return Buffer.from(`${collection}\u0000${key}`, 'utf8');
}

function encodeValue(offset: number, partition: number, json: string): Buffer {
  const buf = Buffer.allocUnsafe(VALUE_HEADER_BYTES + Buffer.byteLength(json));
  buf.writeDoubleBE(offset, 0);
  buf.writeUInt32BE(partition, 8);
  buf.write(json, VALUE_HEADER_BYTES, 'utf8');
  return buf;
}

function partitionOf(value: Buffer): number {
  return value.readUInt32BE(8);
}

function decodeValue(key: string, value: Buffer): StoredDoc {
  return {
    key,
    offset: value.readDoubleBE(0),
    partition: partitionOf(value),
    json: value.toString('utf8', VALUE_HEADER_BYTES),
  };
}

/** The LMDB key range of a collection narrowed by start/end/prefix/after; null when empty. */
function keyBounds(collection: string, range: KeyRange): { start: Buffer; end: Buffer } | null {
  const base = Buffer.from(`${collection}\u0000`, 'utf8');
  let start: Buffer = base;
  // 0x01 sorts right after the 0x00 separator: the first key past this collection.
  let end: Buffer = Buffer.from(`${collection}\u0001`, 'utf8');
  const raise = (candidate: Buffer) => {
    if (Buffer.compare(candidate, start) > 0) start = candidate;
  };
  const lower = (candidate: Buffer) => {
    if (Buffer.compare(candidate, end) < 0) end = candidate;
  };
  if (range.start !== undefined) raise(docKey(collection, range.start));
  if (range.after !== undefined) raise(Buffer.concat([docKey(collection, range.after), ZERO]));
  if (range.prefix !== undefined && range.prefix !== '') {
    const prefix = docKey(collection, range.prefix);
    raise(prefix);
    const next = successor(prefix);
    if (next !== null) lower(next);
  }
  if (range.end !== undefined) lower(docKey(collection, range.end));
  return Buffer.compare(start, end) < 0 ? { start, end } : null;
}

const ZERO = Buffer.from([0]);

/** The smallest byte string greater than every string starting with `prefix`, if there is one. */
function successor(prefix: Buffer): Buffer | null {
  for (let i = prefix.length - 1; i >= 0; i--) {
    if (prefix[i] !== 0xff) {
      const next = Buffer.from(prefix.subarray(0, i + 1));
      next[i]++;
      return next;
    }
  }
  return null;
}
