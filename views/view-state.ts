/**
 * One view's state (FORMAT.md beside this file): an LMDB environment of its own holding, per
 * source document, its current contribution; per group, its count and exact sums, with ordered
 * indexes for min, max and latest; per source partition, its frontier; and the outbox of output
 * documents changed but not yet acknowledged by the log. A batch of source records changes all of
 * these in one transaction, so after a crash the state is the one of a frontier, never between.
 */
import { closeSync, existsSync, openSync, readSync } from 'node:fs';
import { open, type Database, type RootDatabase } from 'lmdb';

/** What one source document gives its group: kept so an update or delete can take it back. */
export interface Contribution {
  /** The output key: the JSON text of the array of groupBy values. */
  group: string;
  /** The groupBy values, in the definition's order. */
  keys: unknown[];
  /** The aggregated fields' values (only those an aggregate reads). */
  fields: Record<string, unknown>;
  /** (record timestamp, partition, offset): orders the group's documents for latest(). */
  at: [number, number, number];
}

/** A group's running totals: exact sums as BigInt text of value·2^1074 (exact-sum.ts sumText). */
export interface GroupTotals {
  keys: unknown[];
  count: number;
  /** field → [scaled sum, how many numbers]. */
  sums: Record<string, [string, number]>;
}

/** Either the output document's JSON text, or null: a tombstone for the output key. */
export interface OutboxEntry {
  json: string | null;
}

/**
 * The layout of the state (FORMAT in views/README.md): 3 since a projection keeps its output
 * documents' JSON in `docs` (1 kept `true` there, 2 a copy of each in a table of its own). A
 * projection's state of another layout is rebuilt from the start of its source. A grouping's
 * state is the same in every layout (2 added `watched:<p>`, read as absent where missing), so
 * one of any layout is resumed from, unless its source is a view: `sourceEpoch:<p>` came with 3.
 * Its sums became hexadecimal text within layout 3 (exact-sum.ts): forward only, as a build
 * before that throws on a negative one (views/README.md, State layout).
 */
export const STATE_LAYOUT = 3;

/**
 * The `meta` flag of a state whose `extremes` and `latest` hold only what its aggregates read:
 * states written before those indexes were kept only for min()/max() and latest() have entries
 * nothing would remove, deleted once when such a state is opened (grouping.ts). An emptied state
 * (discard()) has none to delete.
 */
export const INDEXES_PRUNED = 'indexesPruned';

/** `meta` key: present while the state is rebuilt from the source's start over older output. */
const HELD = 'held';

/**
 * LMDB's meta page begins the file: its magic number, little-endian, after the page header (24
 * bytes in the LMDB that lmdb-js builds: page number, transaction id, flags and bounds). lmdb-js
 * crashes the process on opening a file that is not LMDB's, so the state is checked first.
 */
const LMDB_MAGIC = 0xbeefc0de;
const LMDB_MAGIC_AT = 24;

/** Whether `file` is absent (a new state) or begins as an LMDB file does. */
export function stateFileReadable(file: string): boolean {
  if (!existsSync(file)) return true;
  const head = Buffer.alloc(LMDB_MAGIC_AT + 4);
  const fd = openSync(file, 'r');
  try {
    const read = readSync(fd, head, 0, head.length, 0);
    return read === head.length && head.readUInt32LE(LMDB_MAGIC_AT) === LMDB_MAGIC;
  } finally {
    closeSync(fd);
  }
}

export class ViewState {
  readonly env: RootDatabase;
  /**
   * Source key → its Contribution (groupings), or its output document as JSON text (a
   * projection's members): what its owner appends again for a key whose last record in the
   * view's topic is fenced (fence-watch.ts).
   */
  readonly docs: Database<Contribution | string, string>;
  readonly groups: Database<GroupTotals, string>;
  /** `group US field US sortable(value) US source key` → the value: min and max per field. */
  readonly extremes: Database<number, string>;
  /** `group US sortable(ts) sortable(partition) sortable(offset)` → source key. */
  readonly latest: Database<string, string>;
  readonly outbox: Database<OutboxEntry, string>;
  /**
   * `frontier:<p>` → next unprocessed source offset; `streamTime:<p>` → greatest event time seen
   * (windowed views); `coversFrom:<p>` → the log start it skipped to when retention had removed
   * records it never saw; `refused`, `late` → records refused, records late; `watched:<p>`,
   * `watchEpoch:<p>` → the next offset of the view's topic partition p its owner has not read
   * back, and the greatest epoch before it; `sourceEpoch:<p>` → the greatest epoch in source
   * partition p before its frontier, when the source is a view; `layout` → STATE_LAYOUT; `held` →
   * 1 while the output is held (held()).
   */
  readonly meta: Database<number, string>;

  constructor(path: string) {
    this.env = open({ path, compression: false });
    const json = (name: string) => this.env.openDB({ name, encoding: 'json' });
    this.docs = json('docs') as Database<Contribution | string, string>;
    this.groups = json('groups') as Database<GroupTotals, string>;
    this.extremes = json('extremes') as Database<number, string>;
    this.latest = json('latest') as Database<string, string>;
    this.outbox = json('outbox') as Database<OutboxEntry, string>;
    this.meta = json('meta') as Database<number, string>;
  }

  /**
   * Whether a view of `kind` can resume from this state's layout (or it is empty): else rebuilt.
   * A grouping's state is the same in every layout, unless its source is a view: the greatest
   * epoch a source partition (`sourceEpoch:<p>`) came with layout 3, and without it a resumed
   * state would count records of a fenced writer that the serve-nodes skip.
   */
  usableLayout(kind: 'grouping' | 'projection', sourceIsView: boolean): boolean {
    if (this.empty() || this.meta.get('layout') === STATE_LAYOUT) return true;
    return kind === 'grouping' && !sourceIsView;
  }

  setLayout(): void {
    this.meta.put('layout', STATE_LAYOUT);
  }

  /** The next offset of the view topic's partition its owner has not read back; null: none. */
  watched(partition: number): number | null {
    return this.meta.get(`watched:${partition}`) ?? null;
  }

  /** The greatest epoch in the view topic's partition before `watched` (−1: none). */
  watchEpoch(partition: number): number {
    return this.meta.get(`watchEpoch:${partition}`) ?? -1;
  }

  setWatched(partition: number, next: number, epoch: number): void {
    this.meta.put(`watched:${partition}`, next);
    this.meta.put(`watchEpoch:${partition}`, epoch);
  }

  /** The greatest epoch in a source view's partition before its frontier (−1: none). */
  sourceEpoch(partition: number): number {
    return this.meta.get(`sourceEpoch:${partition}`) ?? -1;
  }

  setSourceEpoch(partition: number, epoch: number): void {
    this.meta.put(`sourceEpoch:${partition}`, epoch);
  }

  frontier(partition: number): number {
    return this.meta.get(`frontier:${partition}`) ?? 0;
  }

  setFrontier(partition: number, offset: number): void {
    this.meta.put(`frontier:${partition}`, offset);
  }

  /** The greatest event time seen in a source partition (windowed views); null: none yet. */
  streamTime(partition: number): number | null {
    return this.meta.get(`streamTime:${partition}`) ?? null;
  }

  setStreamTime(partition: number, ms: number): void {
    this.meta.put(`streamTime:${partition}`, ms);
  }

  /** The log start a source partition was taken from when retention had removed records before it. */
  coversFrom(partition: number): number | null {
    return this.meta.get(`coversFrom:${partition}`) ?? null;
  }

  setCoversFrom(partition: number, offset: number): void {
    this.meta.put(`coversFrom:${partition}`, offset);
  }

  /** Whether nothing was ever written here: a state that begins from the source's start. */
  empty(): boolean {
    for (const _ of this.meta.getKeys({ limit: 1 })) return false;
    return true;
  }

  late(): number {
    return this.meta.get('late') ?? 0;
  }

  addLate(count: number): void {
    this.meta.put('late', this.late() + count);
  }

  refused(): number {
    return this.meta.get('refused') ?? 0;
  }

  addRefused(count: number): void {
    this.meta.put('refused', this.refused() + count);
  }

  /**
   * Whether the output is held until the state reaches the source's end offsets read at a claim:
   * the state was emptied (discard(), or found unreadable) while the view's topic holds what it
   * had, so what a partial rebuild appended would take the view back. Stored, so a crash during
   * the rebuild, or before its first round, holds it on restart too.
   */
  held(): boolean {
    return this.meta.get(HELD) !== undefined;
  }

  setHeld(held: boolean): void {
    if (held) this.meta.put(HELD, 1);
    else this.meta.remove(HELD);
  }

  /**
   * Empties the state in one transaction but for the outbox, which gets a tombstone for every
   * output key it held (`outputKeys`: the groups, or a projection's members): a rebuild from the
   * source's start overwrites those that still have a document, and the rest leave the view. The
   * output is held (held()) in the same transaction: the tombstones go out with the whole rebuild.
   */
  async discard(outputKeys: 'groups' | 'docs'): Promise<void> {
    await this.env.transaction(() => {
      for (const key of [...this[outputKeys].getKeys()]) this.outbox.put(key, { json: null });
      for (const db of [this.docs, this.groups, this.extremes, this.latest, this.meta]) {
        for (const key of [...db.getKeys()]) db.remove(key);
      }
      this.setLayout();
      this.setHeld(true);
      this.meta.put(INDEXES_PRUNED, 1);
    });
  }

  async close(): Promise<void> {
    await this.env.close();
  }
}
