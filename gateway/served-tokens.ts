/**
 * The text of the token a read answers with, kept per (collection, incarnation, partitions read)
 * for reads that sent no token: such a read's token depends only on the applied offsets it was
 * served at, which stay the same from one read to the next until the node applies more, so
 * building and encoding it again on every read was work a bare handler never does (issue 28).
 * A read that sent a token answers the merge with it, encoded each time.
 */
import type { AppliedOffsets } from '../shared/serve-api.js';
import type { TokenCodec } from '../shared/token.js';
import { servedToken, type ReadPlan } from './consistency.js';

/** Entries kept; names come from requests, so past this many the kept ones are dropped. */
const SERVED_TOKENS_KEPT_MAX = 4096;

interface Kept {
  /** The applied offset of each partition read, in the read's order (-1: none answered). */
  applied: number[];
  text: string;
}

export class ServedTokens {
  private readonly kept = new Map<string, Kept>();

  constructor(private readonly codec: TokenCodec) {}

  /** What `servedToken` answers, encoded. */
  text(
    plan: ReadPlan,
    collection: string,
    applied: AppliedOffsets,
    partitions: readonly number[],
  ): string {
    if (plan.token.size > 0) {
      return this.codec.encode(servedToken(plan, collection, applied, partitions));
    }
    const id = `${plan.incarnation}/${partitions.length === 1 ? partitions[0] : partitions.join(',')}/${collection}`;
    const kept = this.kept.get(id);
    if (kept !== undefined && sameApplied(kept.applied, applied, partitions)) return kept.text;
    const text = this.codec.encode(servedToken(plan, collection, applied, partitions));
    if (this.kept.size >= SERVED_TOKENS_KEPT_MAX) this.kept.clear();
    this.kept.set(id, { applied: partitions.map((p) => applied[String(p)] ?? -1), text });
    return text;
  }
}

function sameApplied(
  kept: readonly number[],
  applied: AppliedOffsets,
  partitions: readonly number[],
): boolean {
  for (let i = 0; i < partitions.length; i++) {
    if ((applied[String(partitions[i])] ?? -1) !== kept[i]) return false;
  }
  return true;
}
