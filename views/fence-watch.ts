/**
 * What a view's owner reads back from its own topic (views/README.md, Fenced records and
 * compaction). Every serve-node skips a record whose epoch is below the greatest seen before it in
 * its partition (shared/view-epoch.ts), but log compaction keeps a key's last record whatever its
 * epoch: were a fenced record a key's last, a replica rebuilt from the compacted topic would find
 * neither it nor the owner's value it hid. So the owner reads its topic, and every key of a fenced
 * record is appended again with the owner's current value, a record of its own epoch after it. A
 * claim of an epoch above the owner's says that another processor runs the view now.
 */
import type { StoredRecord } from '../shared/batch-codec.js';
import { epochOf, fenceRecords } from '../shared/view-epoch.js';

export interface WatchedRecords {
  /** Keys of records that are fenced (below the greatest epoch before them), to append again. */
  fenced: string[];
  /** The greatest epoch after the last record read (before `deposedAt`, when there is one). */
  epochAfter: number;
  /** The next offset to read: past the last record, or the claim of a greater epoch. */
  next: number;
  /** The offset of a claim of an epoch above `ownEpoch`: the view was claimed by another. */
  deposedAt: number | null;
}

/** Whether a record is a claim by a run whose epoch is above `epoch`: that run deposes it. */
export function claimAbove(record: StoredRecord, epoch: number): boolean {
  const said = epochOf(record);
  return said !== null && said.claim && said.epoch > epoch;
}

/**
 * Reads one partition's records in offset order, from `from`, with `epochBefore` the greatest
 * epoch of the records before it. Stops at a claim above `ownEpoch`, which is read again next time.
 * What is fenced is what the serve-nodes leave out (fenceRecords) but for claims.
 */
export function watchRecords(
  records: readonly StoredRecord[],
  from: number,
  epochBefore: number,
  ownEpoch: number,
): WatchedRecords {
  const read = records.filter((record) => record.offset >= from);
  const cut = read.findIndex((record) => claimAbove(record, ownEpoch));
  const slice = cut === -1 ? read : read.slice(0, cut);
  const { kept, epochAfter } = fenceRecords(slice, epochBefore);
  const applied = new Set(kept);
  const fenced = slice.filter((r) => !applied.has(r) && epochOf(r)?.claim !== true);
  const deposedAt = cut === -1 ? null : read[cut].offset;
  return {
    fenced: [...new Set(fenced.map((r) => r.key))],
    epochAfter,
    next: deposedAt ?? (slice.length === 0 ? from : slice[slice.length - 1].offset + 1),
    deposedAt,
  };
}
