/**
 * Reads a serve-node's GET /internal/status during a rebuild: records applied out of the log's
 * end offsets, and whether it has caught up: every partition it hosts has a lag of 0, and it says
 * it is ready (or, from a node that does not say, every partition is tailing). The lag alone is
 * not enough: just after the rebuild request the old stores still answer with a lag of 0, and a
 * status without partitions (the stores being swapped) is not caught up either.
 */
import { asObject, num, objects } from './loose-json.js';

export interface RebuildProgress {
  applied: number;
  /** Records to apply: the sum over topic-partitions of the largest end offset known for each. */
  total: number;
  /** `topic/partition` → its log end offset as the serve-node last saw it. */
  ends: Map<string, number>;
  caughtUp: boolean;
  /** Partition errors the serve-node reports, as `TOPIC partition N: message`. */
  errors: string[];
}

/**
 * `knownEnds` carries end offsets seen earlier (before the wipe, say): a partition the new stores
 * have not read yet reports an end of 0, and the bar's total must not shrink to it.
 */
export function readRebuildProgress(
  body: unknown,
  knownEnds: ReadonlyMap<string, number> = new Map(),
): RebuildProgress {
  const root = asObject(body);
  const partitions = objects(root.partitions);
  let applied = 0;
  const ends = new Map(knownEnds);
  let lagZero = partitions.length > 0;
  let tailing = partitions.length > 0;
  const errors: string[] = [];
  for (const p of partitions) {
    const next = num(p.applied) ?? 0;
    const end = num(p.logEndOffset) ?? next;
    const lag = num(p.lag) ?? Math.max(end - next, 0);
    applied += next;
    const partition = num(p.partition);
    const topic = typeof p.topic === 'string' ? p.topic : null;
    const named =
      topic === null
        ? `partition ${String(p.partition)}`
        : `${topic} partition ${String(p.partition)}`;
    if (partition !== null) {
      const key = `${topic ?? ''}/${partition}`;
      ends.set(key, Math.max(end, next, ends.get(key) ?? 0));
    }
    if (lag !== 0) lagZero = false;
    if (p.state !== 'tailing') tailing = false;
    if (typeof p.error === 'string') errors.push(`${named}: ${p.error}`);
  }
  const ready = typeof root.ready === 'boolean' ? root.ready : tailing;
  const total = Math.max(
    [...ends.values()].reduce((sum, end) => sum + end, 0),
    applied,
  );
  return { applied, total, ends, caughtUp: lagZero && ready, errors };
}
