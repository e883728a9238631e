/**
 * The checker: given a recorded history, the whole log read after healing, and the final strong
 * reads, proves or refutes issue 15's guarantees. Each rule answers anomalies naming the
 * operations involved:
 *
 * (a) `lost`, `duplicated`, `phantom`, `stored-refused`, `tombstones`, `offset-mismatch`: every ok
 *     write is in the log exactly once, every unknown one at most once, a refused one never, and
 *     every record names a write that was attempted, on its key. Deletes are tombstones without a
 *     value: an ok single DELETE's answered offset must hold a tombstone of its key, and a key's
 *     tombstones number at least its ok deletes and at most its ok and unknown ones.
 * (b) `stale-read`, `read-unknown-value`, `search-missed`: read-your-writes and monotonic reads
 *     per session. A token read (or a scanned item) of a key must be at or after, in the key's log
 *     order, the session's own latest acknowledged write of that key and whatever the session read
 *     of it before; a 404 needs a tombstone there. A search at the token for the unique term of
 *     the session's own write must find it unless the key was written again later.
 * (c) `not-linearizable`, `linearizability-unchecked`: strong reads and writes of each key against a
 *     register, Wing & Gong's search (with reads linearized greedily, which is safe for a register,
 *     and memoized states). Unknown writes may take effect at any time after they began, or never.
 *     Bound: a key with more than MAX_OPS_PER_KEY writes and strong reads, or whose search visits
 *     more than MAX_STATES_PER_KEY states, is not decided and reported as unchecked.
 * (d) `feed-order`, `feed-mismatch`, `feed-missed`, `feed-stalled`: the change feed, across its
 *     reconnects, delivers per topic-partition strictly increasing offsets, each the log's record at
 *     that offset, and (once it caught up) every record of the log.
 * (e) `final-state`, `final-search`, `model-search`: every key's final strong GET equals the last
 *     record of the key in the log; every query's answer on a serve-node equals its answer on a
 *     replica rebuilt from the log (replay.ts): the total, and the hits in order with their keys,
 *     partitions, offsets, scores (exactly: both index the same records) and the writes their
 *     values name; and what does not depend on scoring (the keys a query and a filter match, the
 *     values they hold, the total, the facet counts) equals a brute-force model of the final
 *     documents that shares no code with the product (oracle.ts).
 * (f) `token-stale-read`, `token-stale-scan`, `token-stale-search`, `token-search-missed`,
 *     `token-undecodable`: every token read reflects every record at or below its token's offsets,
 *     whichever session wrote it (check-tokens.ts).
 */
import { checkTokenReads, type TokenDecoder, type TokenReadStats } from './check-tokens.js';
import type { FeedEvent, History, Op, OpKind, Outcome } from './history.js';
import { modelDifferences, type ModelSearch } from './oracle.js';

export const MAX_OPS_PER_KEY = 400;
export const MAX_STATES_PER_KEY = 500_000;

/** One record of the log as read back after healing; writeId null for a tombstone. */
export interface LogEntry {
  collection: string;
  partition: number;
  offset: number;
  key: string;
  /** The write the value names (-1: a value no recorded write has), null for a tombstone. */
  writeId: number | null;
}

export interface FinalRead {
  collection: string;
  key: string;
  /** null: 404; undefined: the read failed. */
  writeId: number | null | undefined;
  offset: number | null;
}

/** A search answer, as compared: partition and offset null where the route does not say. */
export interface SearchAnswer {
  total: number;
  hits: {
    key: string;
    score: number;
    partition: number | null;
    offset: number | null;
    writeId: number;
  }[];
}

/** One query on a live replica and on one rebuilt from the log; null where it failed. */
export interface FinalSearch {
  replica: string;
  collection: string;
  q: string;
  live: SearchAnswer | null;
  rebuilt: SearchAnswer | null;
  error?: string;
}

/** What the runner asked after healing: every key strongly, and searches to compare. */
export interface FinalAnswers {
  reads: FinalRead[];
  /** Rule (e): live against a replica rebuilt from the log. */
  searches: FinalSearch[];
  /** Rule (e): live against the brute-force model. */
  modelSearches: ModelSearch[];
}

export interface Anomaly {
  rule: 'a' | 'b' | 'c' | 'd' | 'e' | 'f' | 'g';
  kind: string;
  message: string;
  /** The operations involved (ids in the history). */
  ops: number[];
}

export interface CheckStats {
  ops: Record<string, Record<Outcome, number>>;
  writes: Record<Outcome, number>;
  logRecords: number;
  feedEvents: number;
  feedConnections: number;
  linearizability: { keys: number; unchecked: number; ops: number; maxOpsPerKey: number };
  /** Rule (f): the token reads held to their tokens, and the keys they were held to. */
  tokenReads: TokenReadStats;
  finalKeys: number;
  /** Queries compared with a replay, and the hits they held. */
  finalSearches: { queries: number; hits: number };
  /** Queries compared with the brute-force model, the hits they held, and the facet counts. */
  modelSearches: { queries: number; hits: number; facetCounts: number };
}

export interface CheckResult {
  anomalies: Anomaly[];
  stats: CheckStats;
}

const keyOf = (collection: string, key: string) => `${collection}\u0000${key}`;
const partitionOf = (collection: string, partition: number) => `${collection}\u0000${partition}`;

export function check(
  history: History,
  log: LogEntry[],
  final: FinalAnswers,
  decodeToken: TokenDecoder,
): CheckResult {
  const { reads: finalReads, searches: finalSearches, modelSearches } = final;
  const anomalies: Anomaly[] = [];
  const ctx = new CheckContext(history, log);
  checkWrites(ctx, anomalies);
  checkSessions(ctx, anomalies);
  const tokenReads = checkTokenReads(ctx, decodeToken, anomalies);
  const linearizability = checkStrongReads(ctx, anomalies);
  checkFeed(ctx, history, anomalies);
  checkFinal(ctx, finalReads, anomalies);
  checkFinalSearches(finalSearches, anomalies);
  checkModelSearches(modelSearches, anomalies);

  const ops: Record<string, Record<Outcome, number>> = {};
  const writes: Record<Outcome, number> = { ok: 0, fail: 0, unknown: 0 };
  for (const op of history.ops) {
    ops[op.kind] ??= { ok: 0, fail: 0, unknown: 0 };
    ops[op.kind][op.outcome]++;
    writes[op.outcome] += op.writes?.length ?? 0;
  }
  return {
    anomalies,
    stats: {
      ops,
      writes,
      logRecords: log.length,
      feedEvents: history.feed.length,
      feedConnections: history.feedConnections,
      linearizability,
      tokenReads,
      finalKeys: finalReads.length,
      finalSearches: {
        queries: finalSearches.length,
        hits: finalSearches.reduce((sum, s) => sum + (s.live?.hits.length ?? 0), 0),
      },
      modelSearches: {
        queries: modelSearches.length,
        hits: modelSearches.reduce((sum, s) => sum + (s.live?.hits.size ?? 0), 0),
        facetCounts: modelSearches.reduce((sum, s) => sum + (s.live?.facets.size ?? 0), 0),
      },
    },
  };
}

/** Indexes of the history and the log that every rule uses. */
export class CheckContext {
  /** writeId → the op that attempted it and its item. */
  readonly writes = new Map<number, { op: Op; index: number }>();
  /** writeId → the log entries naming it. */
  readonly logged = new Map<number, LogEntry[]>();
  /** c/k → the key's log entries in offset order. */
  readonly keyLog = new Map<string, LogEntry[]>();
  /** c/p → offset → entry. */
  readonly at = new Map<string, Map<number, LogEntry>>();

  constructor(
    readonly history: History,
    readonly log: LogEntry[],
  ) {
    for (const op of history.ops) {
      op.writes?.forEach((w, index) => this.writes.set(w.writeId, { op, index }));
    }
    for (const entry of [...log].sort((x, y) => x.offset - y.offset)) {
      if (entry.writeId !== null) {
        const list = this.logged.get(entry.writeId) ?? [];
        list.push(entry);
        this.logged.set(entry.writeId, list);
      }
      const k = keyOf(entry.collection, entry.key);
      const list = this.keyLog.get(k) ?? [];
      list.push(entry);
      this.keyLog.set(k, list);
      const p = partitionOf(entry.collection, entry.partition);
      let offsets = this.at.get(p);
      if (offsets === undefined) this.at.set(p, (offsets = new Map()));
      offsets.set(entry.offset, entry);
    }
  }

  /** The log offset of a write that is in the log once, or undefined. */
  offsetOf(writeId: number): number | undefined {
    const list = this.logged.get(writeId);
    return list?.length === 1 ? list[0].offset : undefined;
  }

  /** The op that wrote what the key's log holds at `offset`, for naming it in an anomaly. */
  opAt(collection: string, key: string, offset: number): number[] {
    const entry = this.keyLog.get(keyOf(collection, key))?.find((e) => e.offset === offset);
    if (entry?.writeId == null) return [];
    const write = this.writes.get(entry.writeId);
    return write ? [write.op.id] : [];
  }
}

/** (a): the log holds every ok write once, unknown ones at most once, nothing else. */
function checkWrites(ctx: CheckContext, anomalies: Anomaly[]): void {
  for (const [writeId, { op, index }] of ctx.writes) {
    const item = op.writes![index];
    if (item.delete) continue;
    const found = ctx.logged.get(writeId) ?? [];
    const where = `write ${writeId} (${op.kind} ${item.collection}/${item.key}, ${op.outcome})`;
    if (op.outcome === 'ok' && found.length === 0) {
      anomalies.push({
        rule: 'a',
        kind: 'lost',
        message: `${where} is not in the log`,
        ops: [op.id],
      });
    }
    if (op.outcome === 'fail' && found.length > 0) {
      const message = `${where} was refused (${op.error}) but is in the log`;
      anomalies.push({ rule: 'a', kind: 'stored-refused', message, ops: [op.id] });
    }
    if (found.length > 1) {
      const offsets = found.map((e) => `${e.partition}@${e.offset}`).join(', ');
      const message = `${where} is in the log ${found.length} times: ${offsets}`;
      anomalies.push({ rule: 'a', kind: 'duplicated', message, ops: [op.id] });
    }
    for (const entry of found) {
      if (entry.collection !== item.collection || entry.key !== item.key) {
        const message = `${where} is in the log under ${entry.collection}/${entry.key}`;
        anomalies.push({ rule: 'a', kind: 'phantom', message, ops: [op.id] });
      }
    }
    if (op.outcome === 'ok' && op.offset !== undefined && found.length === 1) {
      if (found[0].offset !== op.offset || found[0].partition !== op.partition) {
        const message =
          `${where} was acknowledged at ${op.partition}@${op.offset} but the log holds it at ` +
          `${found[0].partition}@${found[0].offset}`;
        anomalies.push({ rule: 'a', kind: 'offset-mismatch', message, ops: [op.id] });
      }
    }
  }
  for (const entry of ctx.log) {
    if (entry.writeId !== null && !ctx.writes.has(entry.writeId)) {
      const message =
        `${entry.collection}/${entry.key} at ${entry.partition}@${entry.offset} holds ` +
        `write ${entry.writeId}, which no operation attempted`;
      anomalies.push({ rule: 'a', kind: 'phantom', message, ops: [] });
    }
  }
  // Tombstones: counted per key, and an ok single DELETE's offset must hold one of its key.
  const deletes = new Map<string, { ok: Op[]; unknown: Op[]; fail: Op[] }>();
  for (const { op, index } of ctx.writes.values()) {
    const item = op.writes![index];
    if (!item.delete) continue;
    const k = keyOf(item.collection, item.key);
    const counts = deletes.get(k) ?? { ok: [], unknown: [], fail: [] };
    counts[op.outcome].push(op);
    deletes.set(k, counts);
    if (op.outcome === 'ok' && op.offset !== undefined) {
      const entry = ctx.at.get(partitionOf(item.collection, op.partition!))?.get(op.offset);
      if (entry === undefined || entry.writeId !== null || entry.key !== item.key) {
        const message =
          `delete of ${item.collection}/${item.key} was acknowledged at ` +
          `${op.partition}@${op.offset}, where the log holds ` +
          (entry === undefined ? 'nothing' : `${entry.key}: write ${entry.writeId}`);
        anomalies.push({ rule: 'a', kind: 'lost', message, ops: [op.id] });
      }
    }
  }
  for (const [k, entries] of ctx.keyLog) {
    const tombstones = entries.filter((e) => e.writeId === null).length;
    const counts = deletes.get(k) ?? { ok: [], unknown: [], fail: [] };
    if (tombstones < counts.ok.length || tombstones > counts.ok.length + counts.unknown.length) {
      const [collection, key] = k.split('\u0000');
      const message =
        `${collection}/${key} has ${tombstones} tombstones in the log for ${counts.ok.length} ` +
        `acknowledged and ${counts.unknown.length} unknown deletes`;
      const ops = [...counts.ok, ...counts.unknown, ...counts.fail].map((op) => op.id);
      anomalies.push({ rule: 'a', kind: 'tombstones', message, ops });
    }
  }
  for (const [k, counts] of deletes) {
    if (!ctx.keyLog.has(k) && counts.ok.length > 0) {
      const [collection, key] = k.split('\u0000');
      const message = `${collection}/${key}: ${counts.ok.length} acknowledged deletes, no tombstone`;
      anomalies.push({ rule: 'a', kind: 'tombstones', message, ops: counts.ok.map((o) => o.id) });
    }
  }
}

/** (b): read-your-writes and monotonic reads for every session that carries its token. */
function checkSessions(ctx: CheckContext, anomalies: Anomaly[]): void {
  const sessions = new Map<number, Op[]>();
  for (const op of ctx.history.ops) {
    const list = sessions.get(op.session) ?? [];
    list.push(op);
    sessions.set(op.session, list);
  }
  for (const ops of sessions.values()) {
    ops.sort((x, y) => x.id - y.id);
    /** c/k → the offset the session's reads must be at or after, and the op that set it. */
    const floors = new Map<string, { offset: number; op: number }>();
    const raise = (collection: string, key: string, offset: number, op: number) => {
      const k = keyOf(collection, key);
      if ((floors.get(k)?.offset ?? -1) < offset) floors.set(k, { offset, op });
    };
    const seenKey = (op: Op, key: string, writeId: number | null, offset: number | null) => {
      const k = keyOf(op.collection, key);
      const floor = floors.get(k) ?? { offset: -1, op: -1 };
      const involved = floor.op >= 0 ? [floor.op, op.id] : [op.id];
      if (writeId !== null) {
        const logged = ctx.offsetOf(writeId);
        const entry = logged === undefined ? undefined : ctx.logged.get(writeId)![0];
        if (entry === undefined || entry.key !== key || entry.collection !== op.collection) {
          const message =
            `${op.kind} ${op.id} of ${op.collection}/${key} returned write ${writeId}, ` +
            'which the log does not hold once under that key';
          anomalies.push({ rule: 'b', kind: 'read-unknown-value', message, ops: [op.id] });
          return;
        }
        if (offset !== null && offset !== logged) {
          const message =
            `${op.kind} ${op.id} of ${op.collection}/${key} returned write ${writeId} at offset ` +
            `${offset}, but the log holds it at ${logged}`;
          anomalies.push({ rule: 'b', kind: 'read-unknown-value', message, ops: [op.id] });
        }
        if (logged! < floor.offset) {
          const message =
            `session ${op.session}'s ${op.kind} ${op.id} of ${op.collection}/${key} returned ` +
            `offset ${logged}, older than offset ${floor.offset} it wrote or read before (op ${floor.op})`;
          anomalies.push({
            rule: 'b',
            kind: 'stale-read',
            message,
            ops: [...involved, ...ctx.opAt(op.collection, key, logged!)],
          });
        }
        raise(op.collection, key, logged!, op.id);
        return;
      }
      if (floor.offset < 0) return;
      const entries = ctx.keyLog.get(k) ?? [];
      const tombstone = entries.find((e) => e.writeId === null && e.offset >= floor.offset);
      if (tombstone === undefined) {
        const message =
          `session ${op.session}'s ${op.kind} ${op.id} found no ${op.collection}/${key}, but ` +
          `it wrote or read offset ${floor.offset} (op ${floor.op}) and no delete follows it`;
        anomalies.push({ rule: 'b', kind: 'stale-read', message, ops: involved });
        return;
      }
      raise(op.collection, key, tombstone.offset, op.id);
    };

    for (const op of ops) {
      if (op.outcome !== 'ok') continue;
      if ((op.kind === 'put' || op.kind === 'delete') && op.offset !== undefined) {
        raise(op.collection, op.key!, op.offset, op.id);
      } else if (op.kind === 'bulk') {
        for (const w of op.writes!) {
          const offset = w.delete ? undefined : ctx.offsetOf(w.writeId);
          if (offset !== undefined) raise(w.collection, w.key, offset, op.id);
        }
      } else if (op.kind === 'read') {
        const s = op.seen![0];
        seenKey(op, s.key, s.writeId, s.offset);
      } else if (op.kind === 'scan') {
        const listed = new Set<string>();
        for (const s of op.seen!) {
          listed.add(s.key);
          seenKey(op, s.key, s.writeId, s.offset);
        }
        if (op.complete) {
          for (const k of [...floors.keys()]) {
            const [collection, key] = k.split('\u0000');
            if (collection !== op.collection || !key.startsWith(op.prefix!) || listed.has(key)) {
              continue;
            }
            seenKey(op, key, null, null);
          }
        }
      } else if (op.kind === 'search') {
        checkSearch(ctx, op, anomalies);
      }
    }
  }
}

/** A search at the token for the unique term of the session's own ok write. */
function checkSearch(ctx: CheckContext, op: Op, anomalies: Anomaly[]): void {
  const write = ctx.writes.get(op.term!);
  if (write === undefined || write.op.outcome !== 'ok' || write.op.session !== op.session) return;
  const item = write.op.writes![write.index];
  const offset = ctx.offsetOf(op.term!);
  if (offset === undefined || item.delete) return;
  const entries = ctx.keyLog.get(keyOf(item.collection, item.key)) ?? [];
  if (entries[entries.length - 1]?.offset !== offset) return; // written again since: no claim
  if (!op.seen!.some((s) => s.key === item.key && s.writeId === op.term)) {
    const message =
      `session ${op.session}'s search ${op.id} for w${op.term} did not find its own write ` +
      `(op ${write.op.id}) to ${item.collection}/${item.key}, which nothing overwrote`;
    anomalies.push({ rule: 'b', kind: 'search-missed', message, ops: [write.op.id, op.id] });
  }
}

interface RegisterOp {
  id: number;
  call: number;
  ret: number;
  read: boolean;
  value: number | null;
  /** An unknown write: it may never take effect. */
  optional: boolean;
}

/** (c): strong reads linearizable per key, against a register. */
function checkStrongReads(ctx: CheckContext, anomalies: Anomaly[]): CheckStats['linearizability'] {
  const byKey = new Map<string, RegisterOp[]>();
  const add = (collection: string, key: string, op: RegisterOp) => {
    const k = keyOf(collection, key);
    const list = byKey.get(k) ?? [];
    list.push(op);
    byKey.set(k, list);
  };
  let strongReads = 0;
  for (const op of ctx.history.ops) {
    if (op.writes !== undefined && op.outcome !== 'fail') {
      for (const w of op.writes) {
        add(w.collection, w.key, {
          id: op.id,
          call: op.invokeMs,
          ret: op.outcome === 'ok' ? op.completeMs : Infinity,
          read: false,
          value: w.delete ? null : w.writeId,
          optional: op.outcome !== 'ok',
        });
      }
    } else if (op.kind === 'strong-read' && op.outcome === 'ok') {
      strongReads++;
      add(op.collection, op.key!, {
        id: op.id,
        call: op.invokeMs,
        ret: op.completeMs,
        read: true,
        value: op.seen![0].writeId,
        optional: false,
      });
    }
  }
  const stats = { keys: 0, unchecked: 0, ops: 0, maxOpsPerKey: MAX_OPS_PER_KEY };
  for (const [k, ops] of byKey) {
    if (!ops.some((o) => o.read)) continue;
    const [collection, key] = k.split('\u0000');
    if (ops.length > MAX_OPS_PER_KEY) {
      stats.unchecked++;
      const message = `${collection}/${key}: ${ops.length} operations, over the bound ${MAX_OPS_PER_KEY}`;
      anomalies.push({ rule: 'c', kind: 'linearizability-unchecked', message, ops: [] });
      continue;
    }
    const verdict = linearizable(ops);
    stats.ops += ops.length;
    if (verdict === 'unknown') {
      stats.unchecked++;
      const message = `${collection}/${key}: the search passed ${MAX_STATES_PER_KEY} states`;
      anomalies.push({ rule: 'c', kind: 'linearizability-unchecked', message, ops: [] });
      continue;
    }
    stats.keys++;
    if (verdict === false) {
      const reads = ops.filter((o) => o.read).map((o) => `${o.id}→${o.value}`);
      const message =
        `${collection}/${key}: no linearization of its ${ops.length} writes and strong reads ` +
        `fits a register (strong reads op→write: ${reads.slice(0, 20).join(', ')})`;
      anomalies.push({ rule: 'c', kind: 'not-linearizable', message, ops: ops.map((o) => o.id) });
    }
  }
  void strongReads;
  return stats;
}

/**
 * Wing & Gong: pick, among the operations not yet linearized, one that began before every one
 * of them ended, apply it to the register, recurse; memoize (linearized set, value). A read that
 * can go next and matches the value goes next without branching (it changes nothing, and every
 * operation it must follow is already placed). Unknown writes left over at the end never happened.
 */
export function linearizable(
  ops: readonly RegisterOp[],
  maxStates = MAX_STATES_PER_KEY,
): boolean | 'unknown' {
  const sorted = [...ops].sort((x, y) => x.call - y.call);
  const n = sorted.length;
  const done = new Uint8Array(n);
  /** `done` as a number, for the memo's key. */
  let mask = 0n;
  const flip = (i: number) => {
    done[i] ^= 1;
    mask ^= 1n << BigInt(i);
  };
  const seen = new Set<string>();
  let states = 0;
  let exhausted = false;

  const search = (value: number | null, remaining: number): boolean => {
    if (exhausted) return false;
    let required = 0;
    let minRet = Infinity;
    for (let i = 0; i < n; i++) {
      if (done[i]) continue;
      if (!sorted[i].optional) required++;
      if (sorted[i].ret < minRet) minRet = sorted[i].ret;
    }
    if (required === 0) return true;
    const memo = `${value}|${mask.toString(36)}`;
    if (seen.has(memo)) return false;
    seen.add(memo);
    if (++states > maxStates) {
      exhausted = true;
      return false;
    }
    const candidates: number[] = [];
    for (let i = 0; i < n; i++) {
      if (done[i]) continue;
      if (sorted[i].call > minRet) break; // sorted by call: none after this can go next
      candidates.push(i);
    }
    for (const i of candidates) {
      if (sorted[i].read && sorted[i].value === value) {
        flip(i);
        const ok = search(value, remaining - 1);
        flip(i);
        return ok;
      }
    }
    for (const i of candidates) {
      if (sorted[i].read) continue;
      flip(i);
      const ok = search(sorted[i].value, remaining - 1);
      flip(i);
      if (ok) return true;
      if (exhausted) return false;
    }
    return false;
  };
  const ok = search(null, n);
  return exhausted ? 'unknown' : ok;
}

/** (d): the change feed, across reconnects. */
function checkFeed(ctx: CheckContext, history: History, anomalies: Anomaly[]): void {
  const last = new Map<string, FeedEvent>();
  const delivered = new Map<string, Set<number>>();
  const opsOf = (entry: LogEntry | undefined) => {
    const write = entry?.writeId == null ? undefined : ctx.writes.get(entry.writeId);
    return write ? [write.op.id] : [];
  };
  for (const event of history.feed) {
    const p = partitionOf(event.collection, event.partition);
    const before = last.get(p);
    if (before !== undefined && event.offset <= before.offset) {
      const message =
        `${event.collection} partition ${event.partition}: offset ${event.offset} ` +
        `(connection ${event.connection}) after offset ${before.offset} (connection ${before.connection})`;
      anomalies.push({ rule: 'd', kind: 'feed-order', message, ops: [] });
    }
    last.set(p, event);
    let set = delivered.get(p);
    if (set === undefined) delivered.set(p, (set = new Set()));
    set.add(event.offset);
    const entry = ctx.at.get(p)?.get(event.offset);
    if (entry === undefined || entry.key !== event.key || entry.writeId !== event.writeId) {
      const message =
        `${event.collection} partition ${event.partition} offset ${event.offset}: the feed ` +
        `delivered ${event.key}=${event.writeId}, the log holds ` +
        (entry === undefined ? 'nothing' : `${entry.key}=${entry.writeId}`);
      const write = event.writeId === null ? undefined : ctx.writes.get(event.writeId);
      anomalies.push({
        rule: 'd',
        kind: 'feed-mismatch',
        message,
        ops: [...(write ? [write.op.id] : []), ...opsOf(entry)],
      });
    }
  }
  if (!history.feedCaughtUp) {
    const message = `the feed consumer did not reach the log's end after healing`;
    anomalies.push({ rule: 'd', kind: 'feed-stalled', message, ops: [] });
    return;
  }
  const missed: LogEntry[] = [];
  for (const entry of ctx.log) {
    if (!delivered.get(partitionOf(entry.collection, entry.partition))?.has(entry.offset)) {
      missed.push(entry);
    }
  }
  for (const entry of missed.slice(0, 50)) {
    const message =
      `${entry.collection} partition ${entry.partition} offset ${entry.offset} ` +
      `(${entry.key}=${entry.writeId}) was never delivered` +
      (missed.length > 50 ? ` (one of ${missed.length})` : '');
    anomalies.push({ rule: 'd', kind: 'feed-missed', message, ops: opsOf(entry) });
  }
}

/** (e): the serve-node's final documents equal a replay of the log. */
function checkFinal(ctx: CheckContext, finalReads: FinalRead[], anomalies: Anomaly[]): void {
  const read = new Map(finalReads.map((r) => [keyOf(r.collection, r.key), r]));
  const keys = new Set([...ctx.keyLog.keys(), ...read.keys()]);
  for (const k of keys) {
    const [collection, key] = k.split('\u0000');
    const entries = ctx.keyLog.get(k) ?? [];
    const lastEntry = entries[entries.length - 1];
    const expected = lastEntry === undefined ? null : lastEntry.writeId;
    const got = read.get(k);
    if (got === undefined || got.writeId === undefined) {
      const message = `${collection}/${key}: no final strong read answered`;
      anomalies.push({ rule: 'e', kind: 'final-state', message, ops: [] });
      continue;
    }
    if (got.writeId !== expected || (expected !== null && got.offset !== lastEntry.offset)) {
      const message =
        `${collection}/${key}: the serve-node holds ${got.writeId}@${got.offset}, a replay of ` +
        `the log gives ${expected}@${lastEntry?.offset ?? '-'}`;
      anomalies.push({
        rule: 'e',
        kind: 'final-state',
        message,
        ops: lastEntry ? ctx.opAt(collection, key, lastEntry.offset) : [],
      });
    }
  }
}

/** (e), search: each query answers on a live replica what it answers on one rebuilt from the log. */
function checkFinalSearches(searches: FinalSearch[], anomalies: Anomaly[]): void {
  for (const s of searches) {
    const where = `${s.replica}: ${s.collection} q=${JSON.stringify(s.q)}`;
    const differ = (message: string) =>
      anomalies.push({ rule: 'e', kind: 'final-search', message: `${where}: ${message}`, ops: [] });
    if (s.live === null || s.rebuilt === null) {
      differ(`not compared: ${s.error ?? 'no answer'}`);
      continue;
    }
    if (s.live.total !== s.rebuilt.total) {
      differ(`total ${s.live.total}, a replay of the log gives ${s.rebuilt.total}`);
    }
    const length = Math.max(s.live.hits.length, s.rebuilt.hits.length);
    for (let i = 0; i < length; i++) {
      const [a, b] = [s.live.hits[i], s.rebuilt.hits[i]];
      const same =
        a !== undefined &&
        b !== undefined &&
        a.key === b.key &&
        a.score === b.score &&
        a.partition === b.partition &&
        a.offset === b.offset &&
        a.writeId === b.writeId;
      if (!same) {
        const show = (h: typeof a) =>
          h === undefined
            ? 'nothing'
            : `${h.key}=${h.writeId}@${h.partition}:${h.offset} score ${h.score}`;
        differ(`hit ${i} is ${show(a)}, a replay of the log gives ${show(b)}`);
        break;
      }
    }
  }
}

/** (e), the independent oracle: the answers that do not depend on scoring equal the model's. */
function checkModelSearches(searches: ModelSearch[], anomalies: Anomaly[]): void {
  for (const s of searches) {
    const differences = modelDifferences(s);
    if (differences.length === 0) continue;
    const where =
      `${s.collection} q=${JSON.stringify(s.q)}` + (s.filter ? ` filter=${s.filter}` : '');
    const shown = differences.slice(0, 5).join('; ');
    const more = differences.length > 5 ? ` (and ${differences.length - 5} more)` : '';
    anomalies.push({
      rule: 'e',
      kind: 'model-search',
      message: `${where}: ${shown}${more}`,
      ops: [],
    });
  }
}

/** The kinds the report lists, in order. */
export const OP_KINDS: OpKind[] = [
  'put',
  'delete',
  'bulk',
  'read',
  'strong-read',
  'scan',
  'search',
];
