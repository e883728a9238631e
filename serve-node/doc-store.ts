/**
 * The document store: one LMDB environment (a file, docs.mdb) holding the latest version of every
 * document of the hosted partitions, keyed by collection, key space and key in UTF-8 byte order,
 * and each tailed topic-partition's applied offset, written in the same transaction as the
 * documents it covers. Layout (README.md): docs db key = collection, 0x00, key (key space 0) or
 * collection, 0x01, the space in decimal, 0x00, key (space n > 0); value = offset (float64 BE),
 * partition (uint32 BE), the document's JSON. meta db: `applied:<topic>/<p>` → next unapplied
 * offset, `clusterId` → the log cluster the documents came from, `space:<collection>` → the key
 * space its documents are written in now (absent: 0), `dropping:<collection>/<space>` → true while
 * a dropped incarnation's documents are being deleted from that space (collection-drops.ts),
 * `incarnation:<collection>` → the incarnation of the collection the documents are of (absent: 0).
 *
 * Each drop moves the collection to the next key space, so a collection created again under the
 * name is written and read in a space of its own while the old one's documents are deleted.
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

/** A dropped incarnation whose documents are still being deleted: its collection and key space. */
export interface DroppingSpace {
  collection: string;
  space: number;
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
   * The key spaces of this thread's snapshot, by collection, each read on its first lookup and
   * forgotten when the snapshot moves or a drop moves a collection: a lookup a document read cost
   * 0.4-1.3 us against 8-15 us a get. One get a collection, not a range read of every `space:`
   * key, since those keys outlive their collections and the cache is refilled after each commit.
   */
  private readonly spacesSeen = new Map<string, number>();

  /**
   * The key space the collection's documents are written and read in now, read in the snapshot
   * its documents are read in: a read never sees a dropped incarnation's documents, which are
   * deleted over many steps in the space it left.
   */
  private space(collection: string): number {
    const seen = this.spacesSeen.get(collection);
    if (seen !== undefined) return seen;
    const value = this.meta.get(SPACE_PREFIX + collection);
    const space = typeof value === 'number' ? value : 0;
    this.spacesSeen.set(collection, space);
    return space;
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
          const space = this.space(topic);
          for (const record of records) {
            const key = docKey(topic, space, record.key);
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
   * The first step of dropping a collection, in one transaction: the durable mark that its
   * documents' key space is being deleted (a restart resumes it), the move of the collection to
   * the next space (where a collection created again under the name is written at once), and the
   * removal of its checkpoints and view epochs, so no read relies on the documents it still holds
   * and a view declared again under the name starts below no fence. Returns the space left.
   */
  markDropping(collection: string): number {
    const space = this.space(collection);
    this.env.transactionSync(() => {
      this.meta.put(droppingKey(collection, space), true);
      this.meta.put(SPACE_PREFIX + collection, space + 1);
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
    this.spacesSeen.clear();
    return space;
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

  /** The dropped incarnations whose documents are still being deleted, in key order. */
  droppingSpaces(): DroppingSpace[] {
    const keys = this.meta.getKeys({ start: DROPPING_PREFIX, end: 'dropping;' });
    return [...keys].map((key) => {
      const slash = key.lastIndexOf('/');
      return {
        collection: key.slice(DROPPING_PREFIX.length, slash),
        space: Number(key.slice(slash + 1)),
      };
    });
  }

  /**
   * Stores written before key spaces mark a drop `dropping:<collection>`, its documents in space
   * 0 (then every collection's only one): each such mark becomes its space's, and the collection
   * moves to the next space, in one transaction. Run by the writer at open, before any drop step.
   */
  upgradeDroppingMarks(): void {
    const keys = [...this.meta.getKeys({ start: DROPPING_PREFIX, end: 'dropping;' })];
    const old = keys.filter((key) => !key.includes('/'));
    if (old.length === 0) return;
    this.env.transactionSync(() => {
      for (const key of old) {
        const collection = key.slice(DROPPING_PREFIX.length);
        assert(this.space(collection) === 0, `${collection}: a mark of before key spaces`);
        this.meta.put(droppingKey(collection, 0), true);
        this.meta.put(SPACE_PREFIX + collection, 1);
        this.meta.remove(key);
      }
    });
    this.spacesSeen.clear();
  }

  /**
   * Deletes up to `docsMax` documents of a dropped incarnation's key space in one transaction:
   * the number deleted (fewer than `docsMax` once none are left).
   */
  deleteSome({ collection, space }: DroppingSpace, docsMax: number): number {
    const bounds = keyBounds(collection, space, {});
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

  /** The last step of a drop: the space's mark goes once its documents have. */
  unmarkDropping({ collection, space }: DroppingSpace): void {
    this.env.transactionSync(() => {
      this.meta.remove(droppingKey(collection, space));
    });
  }

  /**
   * Moves this thread's read snapshot to the latest commit: a thread that did not write keeps
   * reading the snapshot of its first read until it calls this (lmdb-js 3.5), however many
   * commits another thread made since.
   */
  resetReadTxn(): void {
    this.env.resetReadTxn();
    this.spacesSeen.clear();
  }

  get(collection: string, key: string): StoredDoc | undefined {
    const value = this.docs.get(docKey(collection, this.space(collection), key));
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
    const bounds = keyBounds(collection, this.space(collection), range);
    if (bounds === null) return { items: [], more: false };
    const prefixBytes = bounds.prefixBytes;
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
    const range = afterKey === null ? {} : { after: afterKey };
    const bounds = keyBounds(collection, this.space(collection), range);
    if (bounds === null) return;
    for (const { key, value } of this.docs.getRange(bounds)) {
      yield decodeValue(key.subarray(bounds.prefixBytes).toString('utf8'), value);
    }
  }

  /**
   * The number of documents of a collection after `afterKey` (all when null), in its key space
   * now or in `space` (a dropped incarnation's, whose documents are being deleted).
   */
  countAfter(collection: string, afterKey: string | null, space = this.space(collection)): number {
    const range = afterKey === null ? {} : { after: afterKey };
    const bounds = keyBounds(collection, space, range);
    return bounds === null ? 0 : this.docs.getKeysCount(bounds);
  }

  /**
   * The documents of a collection, or of its `partitions` only: the key count when every one is
   * wanted; otherwise each value's partition field is read (values are read, so this costs more,
   * but neither a key nor a document is decoded).
   */
  countDocuments(collection: string, partitions: ReadonlySet<number> | null): number {
    if (partitions === null) return this.countAfter(collection, null);
    const bounds = keyBounds(collection, this.space(collection), {});
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
   * collection's own. A seek and a key count a key space; a dropped incarnation's space, whose
   * documents are being deleted, counts for no collection.
   */
  collectionBytes(): Map<string, number> {
    const stats = this.docs.getStats() as LmdbDbStats;
    const pages = stats.treeBranchPageCount + stats.treeLeafPageCount + stats.overflowPages;
    const bytes = new Map<string, number>();
    if (stats.entryCount === 0) return bytes;
    let start: Buffer = Buffer.alloc(0);
    for (;;) {
      const [first] = this.docs.getKeys({ start, limit: 1 });
      if (first === undefined) return bytes;
      const { collection, space } = spaceOfKey(first);
      const bounds = keyBounds(collection, space, {});
      // Without bounds the next start would not pass this key, and the walk would not end.
      assert(bounds !== null, 'a key space has bounds');
      if (space === this.space(collection)) {
        const count = this.docs.getKeysCount(bounds);
        bytes.set(collection, Math.round((pages * this.pageBytes * count) / stats.entryCount));
      }
      start = bounds.end;
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
const SPACE_PREFIX = 'space:';

function droppingKey(collection: string, space: number): string {
  return `${DROPPING_PREFIX}${collection}/${space}`;
}

/** Beside the checkpoint, in its transaction: the view epoch it covers (view-fence.ts). */
function epochKey(topic: string, partition: number): string {
  return `epoch:${topic}/${partition}`;
}

function appliedKey(topic: string, partition: number): string {
  return `${APPLIED_PREFIX}${topic}/${partition}`;
}

/** What every document key of a collection's key space starts with. */
function spacePrefixText(collection: string, space: number): string {
  return space === 0 ? `${collection}\u0000` : `${collection}\u0001${space}\u0000`;
}

function spacePrefix(collection: string, space: number): Buffer {
  return Buffer.from(spacePrefixText(collection, space), 'utf8');
}

/** One buffer of one string, on every applied record and every get: no concatenation of two. */
function docKey(collection: string, space: number, key: string): Buffer {
  return Buffer.from(spacePrefixText(collection, space) + key, 'utf8');
}

/** The collection and key space of a documents key (collection, 0x00 | 0x01 space 0x00, key). */
function spaceOfKey(key: Buffer): DroppingSpace {
  // Names and spaces hold no byte below 0x02: the first one ends the name.
  const end = key.findIndex((byte) => byte < 0x02);
  assert(end > 0, 'a documents key is collection, 0x00 or 0x01, ...');
  const collection = key.subarray(0, end).toString('utf8');
  if (key[end] === 0) return { collection, space: 0 };
  const spaceEnd = key.indexOf(0, end + 1);
  assert(spaceEnd > end + 1, 'a key space number ends with 0x00');
  return { collection, space: Number(key.subarray(end + 1, spaceEnd).toString('utf8')) };
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

/**
 * The LMDB key range of a collection's key space narrowed by start/end/prefix/after, and the
 * bytes before a document's key in it; null when empty.
 */
function keyBounds(
  collection: string,
  space: number,
  range: KeyRange,
): { start: Buffer; end: Buffer; prefixBytes: number } | null {
  const base = spacePrefix(collection, space);
  let start: Buffer = base;
  // The prefix ends with 0x00: with 0x01 instead, the first key past this space.
  let end: Buffer = Buffer.from(base);
  end[end.length - 1] = 0x01;
  const raise = (candidate: Buffer) => {
    if (Buffer.compare(candidate, start) > 0) start = candidate;
  };
  const lower = (candidate: Buffer) => {
    if (Buffer.compare(candidate, end) < 0) end = candidate;
  };
  if (range.start !== undefined) raise(docKey(collection, space, range.start));
  if (range.after !== undefined) {
    raise(Buffer.concat([docKey(collection, space, range.after), ZERO]));
  }
  if (range.prefix !== undefined && range.prefix !== '') {
    const prefix = docKey(collection, space, range.prefix);
    raise(prefix);
    const next = successor(prefix);
    if (next !== null) lower(next);
  }
  if (range.end !== undefined) lower(docKey(collection, space, range.end));
  return Buffer.compare(start, end) < 0 ? { start, end, prefixBytes: base.length } : null;
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
