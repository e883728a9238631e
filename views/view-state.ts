/**
 * One view's state (FORMAT.md beside this file): an LMDB environment of its own holding, per
 * source document, its current contribution; per group, its count and exact sums, with ordered
 * indexes for min, max and latest; per source partition, its frontier; and the outbox of output
 * documents changed but not yet acknowledged by the log. A batch of source records changes all of
 * these in one transaction, so after a crash the state is the one of a frontier, never between.
 */
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

/** A group's running totals: exact sums as decimal BigInt text of value·2^1074. */
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

export class ViewState {
  readonly env: RootDatabase;
  /** Source key → Contribution (groupings) or true (a projection's members). */
  readonly docs: Database<Contribution | true, string>;
  readonly groups: Database<GroupTotals, string>;
  /** `group US field US sortable(value) US source key` → the value: min and max per field. */
  readonly extremes: Database<number, string>;
  /** `group US sortable(ts) sortable(partition) sortable(offset)` → source key. */
  readonly latest: Database<string, string>;
  readonly outbox: Database<OutboxEntry, string>;
  /**
   * `frontier:<p>` → next unprocessed source offset; `streamTime:<p>` → greatest event time seen
   * (windowed views); `coversFrom:<p>` → the log start it skipped to when retention had removed
   * records it never saw; `refused`, `late` → records refused, records late.
   */
  readonly meta: Database<number, string>;

  constructor(path: string) {
    this.env = open({ path, compression: false });
    const json = (name: string) => this.env.openDB({ name, encoding: 'json' });
    this.docs = json('docs') as Database<Contribution | true, string>;
    this.groups = json('groups') as Database<GroupTotals, string>;
    this.extremes = json('extremes') as Database<number, string>;
    this.latest = json('latest') as Database<string, string>;
    this.outbox = json('outbox') as Database<OutboxEntry, string>;
    this.meta = json('meta') as Database<number, string>;
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

  async close(): Promise<void> {
    await this.env.close();
  }
}
