/**
 * The apply side of view fencing (shared/view-epoch.ts): of one topic-partition's records from a
 * checkpoint on, those a view's epochs leave in, and the greatest epoch up to any offset, which
 * the LMDB store keeps beside its checkpoint so that the rule goes on where it stopped after a
 * restart. A partition whose records carry no epoch (a collection's) passes whole.
 */
import type { StoredRecord } from '../shared/batch-codec.js';
import { fenceRecords } from '../shared/view-epoch.js';

export interface FencedRecords {
  kept: StoredRecord[];
  /** The greatest epoch of the records below `offset` (−1: none yet). */
  epochBefore(offset: number): number;
}

export function fenceViewRecords(records: StoredRecord[], epochAtStart: number): FencedRecords {
  const steps: { offset: number; epoch: number }[] = [];
  const kept: StoredRecord[] = [];
  let epoch = epochAtStart;
  for (const record of records) {
    const fenced = fenceRecords([record], epoch);
    if (fenced.epochAfter !== epoch)
      steps.push({ offset: record.offset, epoch: fenced.epochAfter });
    epoch = fenced.epochAfter;
    kept.push(...fenced.kept);
  }
  return {
    kept,
    epochBefore: (offset) => {
      let before = epochAtStart;
      for (const step of steps) if (step.offset < offset) before = step.epoch;
      return before;
    },
  };
}
