/**
 * Where stale reads hide: a serve-node cut off from the log (its link cut or stalled) holds a
 * partition that the log has moved past. A token read or a strong read invoked then, that needs
 * a record appended after the link went down, must wait for it: answer once the link heals, or
 * 504, or be served by another replica; never answer without it (rules (b) and (c) check that).
 *
 * This finds the reads that reached that window, so a run can prove it tested it:
 * - a token read of a partition whose serve-node's log link was down when it was invoked, by a
 *   session that had an ok write to that partition invoked after the link went down (its token
 *   carries it);
 * - a strong read of such a partition invoked after an ok write to it, invoked after the link
 *   went down, was acknowledged (the log's end offset it reads covers that write).
 * A write invoked after the link went down was appended after it: the serve-node cannot have it.
 */
import { partitionFor } from '../../shared/partitioner.js';
import type { Op } from './history.js';
import type { FaultWindow } from './nemesis.js';

export interface CutOffReads {
  /** Reads that needed a record their serve-node could not have had. */
  reads: number;
  /** Those reads by outcome: "ok", or the error ("504 token_wait_timeout", "unknown timeout"). */
  outcomes: Record<string, number>;
  /** Ok answers that came before the link healed (another replica, or a stale answer). */
  okBeforeHeal: number;
}

interface Written {
  session: number;
  invokeMs: number;
  completeMs: number;
}

export function cutOffReads(
  ops: readonly Op[],
  windows: readonly FaultWindow[],
  partitions: number,
): CutOffReads {
  const result: CutOffReads = { reads: 0, outcomes: {}, okBeforeHeal: 0 };
  const cuts = windows.filter((w) => w.link?.replicaPartitions != null);
  if (cuts.length === 0) return result;
  /** "collection/partition" → its ok writes. */
  const writes = new Map<string, Written[]>();
  for (const op of ops) {
    if (op.outcome !== 'ok' || op.writes === undefined) continue;
    for (const w of op.writes) {
      const p = `${w.collection}/${partitionFor(w.key, partitions)}`;
      const list = writes.get(p) ?? [];
      list.push({ session: op.session, invokeMs: op.invokeMs, completeMs: op.completeMs });
      writes.set(p, list);
    }
  }
  for (const op of ops) {
    if (op.kind !== 'read' && op.kind !== 'strong-read') continue;
    const partition = partitionFor(op.key!, partitions);
    const window = cuts.find(
      (w) =>
        w.link!.replicaPartitions!.includes(partition) &&
        w.startMs <= op.invokeMs &&
        op.invokeMs < w.endMs,
    );
    if (window === undefined) continue;
    const needed = (writes.get(`${op.collection}/${partition}`) ?? []).some(
      (w) =>
        w.invokeMs >= window.startMs &&
        w.completeMs <= op.invokeMs &&
        (op.kind === 'strong-read' || w.session === op.session),
    );
    if (!needed) continue;
    result.reads++;
    const outcome = op.outcome === 'ok' ? 'ok' : `${op.outcome} ${op.error ?? ''}`.trim();
    result.outcomes[outcome] = (result.outcomes[outcome] ?? 0) + 1;
    if (op.outcome === 'ok' && op.completeMs < window.endMs) result.okBeforeHeal++;
  }
  return result;
}
