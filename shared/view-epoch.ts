/**
 * Fencing of a view's writers (views/README.md, Placement). A processor that takes a view over
 * claims an **epoch**: it appends a claim record to partition 0 of the view's topic, whose offset
 * is the epoch (offsets only grow, so a later claim has a greater epoch, whatever the group
 * coordinator remembers), then a claim carrying that epoch to every other partition, and every
 * output record it appends carries its epoch in a header. Whoever applies a view's topic keeps,
 * per partition, the greatest epoch seen so far and skips a record whose epoch is below it: a
 * paused processor that wakes after its view moved appends with the old epoch, after the new
 * owner's claim, and changes nothing. The rule reads the log alone, so a replica rebuilt from the
 * log skips exactly what one running all along skipped. The rule holds in views' topics only
 * (serve-node/view-fence.ts): a collection's records are applied whatever headers they carry. A
 * record without the header is of epoch −1: in a view's partition, one that someone else wrote
 * there (a Kafka client given the cluster secret) is skipped. Claims are tombstones of a key no
 * output document has, with a header that says what they are: a reader that knows nothing of
 * epochs (kcat) sees a delete of a key that never existed.
 */
import type { RecordHeader, StoredRecord } from './batch-codec.js';
import { partitionFor } from './partitioner.js';

export const EPOCH_HEADER = 'tailbase-epoch';
export const CLAIM_HEADER = 'tailbase-claim';
/** Claim keys begin with a control character, so no output key of ours is one. */
const CLAIM_KEY_PREFIX = '\u0001tailbase-claim-';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The header an output record of epoch `epoch` carries. */
export function epochHeader(epoch: number): RecordHeader {
  return { key: EPOCH_HEADER, value: encoder.encode(String(epoch)) };
}

/**
 * The key of a claim in `partition`: the first of `<prefix>0`, `<prefix>1`, ... that the default
 * partitioner places there, as a log-node checks of every keyed record (about `partitions` tries).
 */
export function claimKey(partition: number, partitions: number): string {
  for (let n = 0; ; n++) {
    const key = `${CLAIM_KEY_PREFIX}${n}`;
    if (partitionFor(key, partitions) === partition) return key;
  }
}

/** A claim record: in partition 0 without an epoch (its offset is the epoch), elsewhere with. */
export function claimHeaders(epoch: number | null): RecordHeader[] {
  const claim = { key: CLAIM_HEADER, value: null };
  return epoch === null ? [claim] : [claim, epochHeader(epoch)];
}

/** What a record says of epochs: null when it carries none (a collection's record). */
export function epochOf(record: StoredRecord): { epoch: number; claim: boolean } | null {
  let epoch: number | null = null;
  let claim = false;
  for (const header of record.headers ?? []) {
    if (header.key === CLAIM_HEADER) claim = true;
    else if (header.key === EPOCH_HEADER && header.value !== null) {
      const value = Number(decoder.decode(header.value));
      if (Number.isSafeInteger(value) && value >= 0) epoch = value;
    }
  }
  if (claim) return { epoch: epoch ?? record.offset, claim };
  return epoch === null ? null : { epoch, claim };
}

/**
 * One record's part of the fence rule: the greatest epoch after it, from `before`, the greatest
 * before it (−1: none; a record without an epoch counts as −1, so the greatest only rises), and
 * whether it changes documents (neither below `before` nor a claim).
 */
export function epochAfter(record: StoredRecord, before: number): { epoch: number; kept: boolean } {
  const said = epochOf(record) ?? { epoch: -1, claim: false };
  if (said.epoch < before) return { epoch: before, kept: false };
  return { epoch: said.epoch, kept: !said.claim };
}

/**
 * The records of one partition, in offset order, that change documents: claims and records of
 * an epoch below the greatest seen before them are left out. `epochBefore` is the greatest epoch
 * of the records before the first (−1: none); answers the greatest after the last. `rose` hears
 * of each record that raises the greatest, with the new greatest.
 */
export function fenceRecords<R extends StoredRecord>(
  records: readonly R[],
  epochBefore: number,
  rose?: (offset: number, epoch: number) => void,
): { kept: R[]; epochAfter: number } {
  let greatest = epochBefore;
  const kept: R[] = [];
  for (const record of records) {
    const after = epochAfter(record, greatest);
    if (after.epoch > greatest) rose?.(record.offset, after.epoch);
    greatest = after.epoch;
    if (after.kept) kept.push(record);
  }
  return { kept, epochAfter: greatest };
}
