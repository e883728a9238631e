/**
 * Rule (f), what each token promised (DESIGN.md, invariant 4): a read that sent token T reflects,
 * for every partition of its collection T names, every record at or below T's offset there,
 * whichever session wrote it. Rule (b) holds a session to its own writes and reads of a key; this
 * one holds every token read to the whole log as read back after healing.
 *
 * What a read can prove, for a key K whose partition T names at offset o, with F the newest record
 * of K at or below o:
 * - a value seen for K must be at least as new as F (at an offset >= F's), so a document deleted
 *   at or below o never appears;
 * - K absent (a 404, or missing from a scan's window) needs a tombstone of K at or after F: F
 *   itself, or a later delete the read may have seen too;
 * - a scan's window is every key under its prefix, up to the last key listed when a cursor says
 *   the page was cut (keys sort by code point, as the gateway merges them);
 * - a search for the unique term of write W at or below o must find it, unless K was written
 *   again after W (the newer value need not carry the term).
 * A write the log does not hold once under the key is rule (b)'s `read-unknown-value`, not
 * judged here.
 */
import { compareCodePoints } from '../../shared/code-points.js';
import { offsetsOf, type TokenOffsets } from '../../shared/token.js';
import type { Anomaly, CheckContext, LogEntry } from './check.js';
import type { Op } from './history.js';

/** Decodes a token the gateway answered (shared/token.ts's TokenCodec, of the run's cluster). */
export type TokenDecoder = (token: string) => TokenOffsets;

export interface TokenReadStats {
  /** Ok token reads, scans and searches whose token names a partition of their collection. */
  reads: number;
  /** Keys those reads were held to: each had a record at or below its token's offset. */
  claims: number;
  /** Of those, the ones whose record there is a put by another session: rule (b) has no claim. */
  othersClaims: number;
}

const READ_KINDS = new Set(['read', 'scan', 'search']);

export function checkTokenReads(
  ctx: CheckContext,
  decode: TokenDecoder,
  anomalies: Anomaly[],
): TokenReadStats {
  const stats: TokenReadStats = { reads: 0, claims: 0, othersClaims: 0 };
  for (const op of ctx.history.ops) {
    if (op.outcome !== 'ok' || !READ_KINDS.has(op.kind) || !op.tokenSent) continue;
    let asked: ReadonlyMap<number, number>;
    try {
      asked = offsetsOf(decode(op.tokenSent), op.collection);
    } catch (error) {
      const message = `${op.kind} ${op.id} sent a token that does not decode: ${(error as Error).message}`;
      anomalies.push({ rule: 'f', kind: 'token-undecodable', message, ops: [op.id] });
      continue;
    }
    if (asked.size === 0) continue;
    stats.reads++;
    new TokenRead(ctx, op, asked, anomalies, stats).check();
  }
  return stats;
}

/** One token read held to its token. */
class TokenRead {
  constructor(
    private readonly ctx: CheckContext,
    private readonly op: Op,
    private readonly asked: ReadonlyMap<number, number>,
    private readonly anomalies: Anomaly[],
    private readonly stats: TokenReadStats,
  ) {}

  check(): void {
    const op = this.op;
    if (op.kind === 'read') {
      const seen = op.seen![0];
      this.hold(seen.key, seen.writeId, 'token-stale-read');
    } else if (op.kind === 'scan') {
      this.checkScan();
    } else {
      this.checkSearch();
    }
  }

  private entries(key: string): LogEntry[] {
    return this.ctx.keyLog.get(`${this.op.collection}\u0000${key}`) ?? [];
  }

  /** The newest record of `key` at or below the token's offset for its partition. */
  private promised(key: string): { entry: LogEntry; tokenOffset: number } | undefined {
    const entries = this.entries(key);
    if (entries.length === 0) return undefined;
    const tokenOffset = this.asked.get(entries[0].partition);
    if (tokenOffset === undefined) return undefined;
    const below = entries.filter((e) => e.offset <= tokenOffset);
    return below.length === 0 ? undefined : { entry: below[below.length - 1], tokenOffset };
  }

  /** Whether seeing `writeId` (null: nothing) of `key` is at least as new as `floor`. */
  private reflects(key: string, writeId: number | null, floor: LogEntry): boolean {
    if (writeId === null) {
      return this.entries(key).some((e) => e.writeId === null && e.offset >= floor.offset);
    }
    const offset = this.ctx.offsetOf(writeId);
    const entry = offset === undefined ? undefined : this.ctx.logged.get(writeId)![0];
    if (entry === undefined || entry.key !== key || entry.collection !== this.op.collection) {
      return true;
    }
    return entry.offset >= floor.offset;
  }

  private count(promised: LogEntry): void {
    this.stats.claims++;
    const write = promised.writeId === null ? undefined : this.ctx.writes.get(promised.writeId);
    if (write !== undefined && write.op.session !== this.op.session) this.stats.othersClaims++;
  }

  /** Holds what the read saw of `key` (null: nothing) to the token, where it promised any. */
  private hold(key: string, writeId: number | null, kind: string): void {
    const promised = this.promised(key);
    if (promised === undefined) return;
    const { entry, tokenOffset } = promised;
    this.count(entry);
    if (this.reflects(key, writeId, entry)) return;
    const op = this.op;
    const saw = writeId === null ? 'no document' : `write ${writeId}`;
    const holds = entry.writeId === null ? 'a tombstone' : `write ${entry.writeId}`;
    const message =
      `session ${op.session}'s ${op.kind} ${op.id} of ${op.collection}/${key} with a token ` +
      `naming partition ${entry.partition} at ${tokenOffset} saw ${saw}, but the log holds ` +
      `${holds} of it at offset ${entry.offset}, at or below the token`;
    const ops = [...this.ctx.opAt(op.collection, key, entry.offset), op.id];
    this.anomalies.push({ rule: 'f', kind, message, ops });
  }

  private checkScan(): void {
    const op = this.op;
    const listed = new Map(op.seen!.map((s) => [s.key, s.writeId]));
    const last = op.seen!.at(-1)?.key;
    if (!op.complete && last === undefined) return;
    for (const k of this.ctx.keyLog.keys()) {
      const [collection, key] = k.split('\u0000');
      if (collection !== op.collection || !key.startsWith(op.prefix!)) continue;
      if (!op.complete && compareCodePoints(key, last!) > 0) continue;
      this.hold(key, listed.get(key) ?? null, 'token-stale-scan');
    }
  }

  private checkSearch(): void {
    const op = this.op;
    for (const hit of op.seen!) this.hold(hit.key, hit.writeId, 'token-stale-search');
    const offset = this.ctx.offsetOf(op.term!);
    if (offset === undefined) return;
    const written = this.ctx.logged.get(op.term!)![0];
    if (written.collection !== op.collection) return;
    const tokenOffset = this.asked.get(written.partition);
    if (tokenOffset === undefined || offset > tokenOffset) return;
    const entries = this.entries(written.key);
    if (entries[entries.length - 1].offset !== offset) return; // written again since: no claim
    this.count(written);
    if (op.seen!.some((s) => s.key === written.key && s.writeId === op.term)) return;
    const message =
      `session ${op.session}'s search ${op.id} for w${op.term} with a token naming partition ` +
      `${written.partition} at ${tokenOffset} did not find write ${op.term} of ` +
      `${op.collection}/${written.key} at offset ${offset}, which nothing overwrote`;
    const ops = [...this.ctx.opAt(op.collection, written.key, offset), op.id];
    this.anomalies.push({ rule: 'f', kind: 'token-search-missed', message, ops });
  }
}
