/**
 * A grouping view's arithmetic over its state (view-state.ts): a source record takes back the
 * document's previous contribution and adds its new one, and each group it touched gets its
 * output document recomputed into the outbox. Without a window a view aggregates the source's
 * current documents, so every aggregate is a function of that set alone (latest() of the log
 * positions in it): the order partitions interleave in changes nothing. With a window every
 * record is an event added to the windows its event time falls in, never taken back; whether a
 * window is still open depends only on its source partition's stream time, kept beside that
 * partition's frontier, so again the interleaving of partitions changes nothing.
 */
import { assert } from '../shared/assert.js';
import { KEY_BYTES_MAX } from '../shared/batch-codec.js';
import type { ParsedView } from '../shared/view-definition.js';
import { eventTimeMs, windowBound, windowStarts } from '../shared/view-window.js';
import { scaled, sumFromText, sumText, unscaled } from './exact-sum.js';
import { sortableNumber } from './sortable.js';
import {
  INDEXES_PRUNED,
  type Contribution,
  type GroupTotals,
  type ViewState,
} from './view-state.js';

type Grouping = Extract<ParsedView, { kind: 'grouping' }>;

/**
 * Between a key's parts: no group key (JSON text escapes it) and no field name holds it. Not a
 * byte below 27: lmdb-js's key encoding treats those as type bytes, and range reads over long
 * keys holding one find nothing.
 */
const SEP = '\u001f';
/** In place of the last SEP, the exclusive end of the range of keys that begin with the parts. */
const RANGE_END = '\u0020';
const utf8 = new TextEncoder();

export interface SourceDocument {
  key: string;
  /** The parsed JSON object, or null: deleted, not an object, or filtered out. */
  doc: Record<string, unknown> | null;
  at: [number, number, number];
}

/** A group's totals while a round runs: sums as BigInts, parsed once and written back once. */
interface RoundTotals {
  keys: unknown[];
  count: number;
  sums: Record<string, [bigint, number]>;
}

export class GroupingArithmetic {
  private readonly numberFields: string[];
  private readonly readFields: string[];
  /** Fields of min() or max(): only theirs are kept in `extremes`. */
  private readonly extremeFields: Set<string>;
  /** Whether latest() is asked for: only then is `latest` kept. */
  private readonly keepsLatest: boolean;
  /**
   * The groups a round touched (null: emptied), written to `groups` once at its end (endRound):
   * a round of a hot group reads and writes its totals once, not once a record. Kept until the
   * next round begins, so the outputs of its groups are read from it, not parsed back from `groups`.
   */
  private readonly round = new Map<string, RoundTotals | null>();
  /** Whether endRound wrote `round` (no round runs): its totals are then `groups`'. */
  private roundEnded = true;
  /** Whether `meta` holds INDEXES_PRUNED; a state begun empty takes it with its first round. */
  private pruned = false;

  constructor(
    private readonly view: Grouping,
    private readonly state: ViewState,
  ) {
    const fieldsOf = (fns: string[]) => [
      ...new Set(view.aggregates.filter((a) => fns.includes(a.fn)).map((a) => a.field as string)),
    ];
    this.numberFields = fieldsOf(['sum', 'avg', 'min', 'max']);
    this.readFields = fieldsOf(['sum', 'avg', 'min', 'max', 'latest']);
    this.extremeFields = new Set(fieldsOf(['min', 'max']));
    this.keepsLatest = view.aggregates.some((a) => a.fn === 'latest');
    this.pruneUnread();
  }

  /** Deletes, once, the index entries of a state written before they were kept only when read. */
  private pruneUnread(): void {
    this.pruned = this.state.meta.get(INDEXES_PRUNED) !== undefined;
    if (this.pruned || this.state.empty()) return;
    this.state.env.transactionSync(() => {
      for (const key of this.state.extremes.getKeys()) {
        if (!this.extremeFields.has(key.split(SEP)[1])) this.state.extremes.remove(key);
      }
      if (!this.keepsLatest) {
        for (const key of this.state.latest.getKeys()) this.state.latest.remove(key);
      }
      this.state.meta.put(INDEXES_PRUNED, 1);
    });
    this.pruned = true;
  }

  /** Begins a round, inside its transaction: nothing of an aborted round is carried over. */
  startRound(): void {
    this.round.clear();
    this.roundEnded = false;
  }

  /** Writes the totals of the groups the round touched, inside its transaction. */
  endRound(): void {
    for (const [group, totals] of this.round) {
      if (totals === null) {
        this.state.groups.remove(group);
        continue;
      }
      const sums: GroupTotals['sums'] = {};
      for (const [field, [sum, n]] of Object.entries(totals.sums)) sums[field] = [sumText(sum), n];
      this.state.groups.put(group, { keys: totals.keys, count: totals.count, sums });
    }
    this.roundEnded = true;
    if (!this.pruned) {
      this.state.meta.put(INDEXES_PRUNED, 1);
      this.pruned = true;
    }
  }

  /**
   * Moves one document's contribution; answers the groups it touched, or 'refused' when its
   * group key would pass the key limit (the document then contributes nothing).
   */
  apply(source: SourceDocument, touched: Set<string>): 'applied' | 'refused' {
    const old = this.state.docs.get(source.key);
    if (typeof old === 'object') {
      this.remove(source.key, old);
      touched.add(old.group);
    }
    const next = source.doc === null ? null : this.contributionOf(source.doc, source.at);
    if (next === null || utf8.encode(next.group).length > KEY_BYTES_MAX) {
      if (old !== undefined) this.state.docs.remove(source.key);
      return next === null ? 'applied' : 'refused';
    }
    this.add(source.key, next);
    this.state.docs.put(source.key, next);
    touched.add(next.group);
    return 'applied';
  }

  /**
   * Adds one event to each of its windows still open in its partition's stream time (which the
   * event itself moves forward); answers the groups it touched, and 'late' when it missed a
   * window that had closed, 'refused' when it has no event time or a window's key would pass the
   * key limit, 'skipped' when it is no event (a tombstone, not an object, filtered out).
   */
  applyEvent(
    source: SourceDocument,
    touched: Set<string>,
  ): 'applied' | 'late' | 'refused' | 'skipped' {
    const window = this.view.window!;
    if (source.doc === null) return 'skipped';
    const timeMs = eventTimeMs(source.doc, window.field);
    if (timeMs === null) return 'refused';
    const [, partition, offset] = source.at;
    const seen = this.state.streamTime(partition);
    const streamTime = seen === null ? timeMs : Math.max(seen, timeMs);
    if (streamTime !== seen) this.state.setStreamTime(partition, streamTime);
    const event = this.contributionOf(source.doc, source.at);
    // Keyed by its log position, the event's fields serve latest() in every window it joins.
    const eventKey = sortableNumber(partition) + sortableNumber(offset);
    let outcome: 'applied' | 'late' | 'refused' = 'applied';
    let stored = false;
    for (const start of windowStarts(window, timeMs)) {
      const end = start + window.sizeMs;
      if (streamTime - end > window.graceMs) {
        outcome = 'late';
        continue;
      }
      const keys = [...event.keys, windowBound(start), windowBound(end)];
      const group = JSON.stringify(keys);
      if (utf8.encode(group).length > KEY_BYTES_MAX) return 'refused';
      this.add(eventKey, { ...event, group, keys });
      // One record for every window the event joins: written once.
      if (!stored) this.state.docs.put(eventKey, event);
      stored = true;
      touched.add(group);
    }
    return outcome;
  }

  /** The output document of a group, as JSON text; null when no document is in it. */
  output(group: string): string | null {
    // A round's start reads the outputs of fenced keys, before it touched any group.
    assert(
      this.roundEnded || this.round.size === 0,
      'a group output is read after its round is written (endRound)',
    );
    const totals = this.totalsOf(group);
    if (totals === null) return null;
    const out: Record<string, unknown> = {};
    this.view.groupBy.forEach((field, i) => {
      out[field] = totals.keys[i];
    });
    if (this.view.window !== null) {
      const n = this.view.groupBy.length;
      out.windowStart = totals.keys[n];
      out.windowEnd = totals.keys[n + 1];
    }
    for (const { output, fn, field } of this.view.aggregates) {
      out[output] = this.aggregate(group, totals, fn, field as string);
    }
    return JSON.stringify(out);
  }

  private aggregate(group: string, totals: RoundTotals, fn: string, field: string): unknown {
    switch (fn) {
      case 'count':
        return totals.count;
      case 'sum':
        return finiteOrNull(unscaled(totals.sums[field][0]));
      case 'avg': {
        const [sum, n] = totals.sums[field];
        return n === 0 ? null : finiteOrNull(unscaled(sum) / n);
      }
      case 'min':
      case 'max':
        return this.extreme(group, field, fn === 'max');
      default:
        return this.latestValue(group, field);
    }
  }

  private contributionOf(doc: Record<string, unknown>, at: Contribution['at']): Contribution {
    const keys = this.view.groupBy.map((field) => doc[field] ?? null);
    const fields: Record<string, unknown> = {};
    for (const field of this.readFields) {
      if (doc[field] !== undefined) fields[field] = doc[field];
    }
    return { group: JSON.stringify(keys), keys, fields, at };
  }

  private add(key: string, c: Contribution): void {
    assert(!this.roundEnded, 'a contribution is added inside a round (startRound)');
    const totals = this.totalsOf(c.group) ?? this.emptyTotals(c.keys);
    totals.count += 1;
    for (const field of this.numberFields) {
      const value = c.fields[field];
      if (typeof value !== 'number') continue;
      const [sum, n] = totals.sums[field];
      totals.sums[field] = [sum + scaled(value), n + 1];
      if (this.extremeFields.has(field)) {
        this.state.extremes.put(extremeKey(c.group, field, value, key), value);
      }
    }
    this.round.set(c.group, totals);
    if (this.keepsLatest) this.state.latest.put(latestKey(c.group, c.at), key);
  }

  private remove(key: string, c: Contribution): void {
    assert(!this.roundEnded, 'a contribution is removed inside a round (startRound)');
    const totals = this.totalsOf(c.group);
    if (totals === null) return;
    totals.count -= 1;
    for (const field of this.numberFields) {
      const value = c.fields[field];
      if (typeof value !== 'number') continue;
      const [sum, n] = totals.sums[field];
      totals.sums[field] = [sum - scaled(value), n - 1];
      if (this.extremeFields.has(field)) {
        this.state.extremes.remove(extremeKey(c.group, field, value, key));
      }
    }
    this.round.set(c.group, totals.count === 0 ? null : totals);
    if (this.keepsLatest) this.state.latest.remove(latestKey(c.group, c.at));
  }

  /** A group's totals as the round left them, or as stored; null: no document in it. */
  private totalsOf(group: string): RoundTotals | null {
    const inRound = this.round.get(group);
    return inRound === undefined ? this.storedTotals(group) : inRound;
  }

  /** A group's totals as `groups` holds them; null: no document in it. */
  private storedTotals(group: string): RoundTotals | null {
    const stored = this.state.groups.get(group);
    if (stored === undefined) return null;
    const sums: RoundTotals['sums'] = {};
    for (const [field, [sum, n]] of Object.entries(stored.sums)) {
      sums[field] = [sumFromText(sum), n];
    }
    return { keys: stored.keys, count: stored.count, sums };
  }

  private emptyTotals(keys: unknown[]): RoundTotals {
    const sums: RoundTotals['sums'] = {};
    for (const field of this.numberFields) sums[field] = [0n, 0];
    return { keys, count: 0, sums };
  }

  private extreme(group: string, field: string, max: boolean): number | null {
    const prefix = group + SEP + field + SEP;
    const end = group + SEP + field + RANGE_END;
    // The value, not the key's text: the key ends in a source key, which may hold bytes lmdb-js
    // reads back as type bytes (a key then comes back as an array).
    for (const { value } of this.state.extremes.getRange({
      start: max ? end : prefix,
      end: max ? prefix : end,
      reverse: max,
      limit: 1,
    })) {
      return value;
    }
    return null;
  }

  private latestValue(group: string, field: string): unknown {
    for (const { value } of this.state.latest.getRange({
      start: group + RANGE_END,
      end: group + SEP,
      reverse: true,
      limit: 1,
    })) {
      const doc = this.state.docs.get(value);
      return typeof doc === 'object' ? (doc.fields[field] ?? null) : null;
    }
    return null;
  }
}

function extremeKey(group: string, field: string, value: number, key: string): string {
  return group + SEP + field + SEP + sortableNumber(value) + SEP + key;
}

function latestKey(group: string, [ts, partition, offset]: Contribution['at']): string {
  return group + SEP + sortableNumber(ts) + sortableNumber(partition) + sortableNumber(offset);
}

function finiteOrNull(x: number): number | null {
  return Number.isFinite(x) ? x : null;
}
