/**
 * The apply side of view fencing (shared/view-epoch.ts): of one topic-partition's records from a
 * checkpoint on, those a view's epochs leave in, and the greatest epoch up to any offset, which
 * the LMDB store keeps beside its checkpoint so that the rule goes on where it stopped after a
 * restart. A partition whose records carry no epoch (a collection's) passes whole.
 */
import type { StoredRecord } from '../shared/batch-codec.js';
import { epochOf } from '../shared/view-epoch.js';

export interface FencedRecords {
  kept: StoredRecord[];
  /** The greatest epoch of the records below `offset` (−1: none yet). */
  epochBefore(offset: number): number;
}

export function fenceViewRecords(records: StoredRecord[], epochAtStart: number): FencedRecords {
  // The apply hot path: a collection's records carry no header and its partition no epoch.
  if (epochAtStart < 0 && records.every((record) => !record.headers?.length)) {
    return { kept: records, epochBefore: () => epochAtStart };
  }
  /** Where the greatest epoch rose, in offset order: offsets and the epoch from each on. */
  const stepOffsets: number[] = [];
  const stepEpochs: number[] = [];
  const kept: StoredRecord[] = [];
  let greatest = epochAtStart;
  for (const record of records) {
    const said = epochOf(record);
    const epoch = said?.epoch ?? -1;
    if (epoch < greatest) continue;
    if (epoch > greatest) {
      stepOffsets.push(record.offset);
      stepEpochs.push(epoch);
      greatest = epoch;
    }
    if (said?.claim !== true) kept.push(record);
  }
  return {
    kept,
    epochBefore: (offset) => {
      // The last step below `offset`, by binary search: a partition may have seen many claims.
      let low = 0;
      let high = stepOffsets.length;
      while (low < high) {
        const middle = (low + high) >>> 1;
        if (stepOffsets[middle] < offset) low = middle + 1;
        else high = middle;
      }
      return low === 0 ? epochAtStart : stepEpochs[low - 1];
    },
  };
}
