/**
 * The apply side of view fencing (shared/view-epoch.ts): of one topic-partition's records from a
 * checkpoint on, those a view's epochs leave in, and the greatest epoch up to any offset, which
 * the LMDB store keeps beside its checkpoint so that the rule goes on where it stopped after a
 * restart. The rule holds in the topics of views only, as the views topic names them: a
 * collection's records are applied whatever headers they carry (a claim header on one is an
 * ordinary record, applied as any other), so a Kafka client that may write a collection but not a
 * view cannot stop the collection's partition by writing an epoch into it.
 *
 * Which topics are views' is read from the log (the views topic) by the rule of
 * shared/topic-kinds.ts, so it is a function of the log and a replica rebuilt from it fences the
 * same records: every record a view's processor appends comes after the view's record in the views
 * topic, which the processor read first. A topic the last read of the views topic did not name is
 * of `unknown` kind until one of its records carries a fence header: its records are applied up to
 * that one, which waits (the partition is held there) until a read of the views topic that began
 * after it says whether the topic is a view's. That read is `TopicFences.ask`'s.
 */
import type { StoredRecord } from '../shared/batch-codec.js';
import { fenceHeaderAt, type TopicKind } from '../shared/topic-kinds.js';
import { fenceRecords } from '../shared/view-epoch.js';

/** What a serve-node knows of which topics are views' (view-topic-fences.ts). */
export interface TopicFences {
  of(topic: string): TopicKind;
  /** A record of a topic of unknown kind waits: find out its kind with a fresh look. */
  ask(topic: string): void;
}

/** No topic is a view's: every record is applied (stores that are only read, tests). */
export const NO_VIEW_TOPICS: TopicFences = { of: () => 'collection', ask: () => undefined };

export interface FencedRecords {
  kept: StoredRecord[];
  /** The greatest epoch of the records below `offset` (−1: none yet). */
  epochBefore(offset: number): number;
  /**
   * The offset of the first record that waits for its topic's kind (TopicFences.ask): nothing at
   * or past it is kept, and the partition's checkpoint stops there.
   */
  holdAt?: number;
}

export function fenceViewRecords(
  records: StoredRecord[],
  epochAtStart: number,
  fence: TopicKind = 'view',
): FencedRecords {
  if (fence === 'collection') return { kept: records, epochBefore: () => -1 };
  if (fence === 'unknown') return unknownTopicRecords(records, epochAtStart);
  // The apply hot path: a view's partition before its first claim carries no epoch.
  if (epochAtStart < 0 && records.every((record) => !record.headers?.length)) {
    return { kept: records, epochBefore: () => epochAtStart };
  }
  /** Where the greatest epoch rose, in offset order: offsets and the epoch from each on. */
  const stepOffsets: number[] = [];
  const stepEpochs: number[] = [];
  const { kept } = fenceRecords(records, epochAtStart, (offset, epoch) => {
    stepOffsets.push(offset);
    stepEpochs.push(epoch);
  });
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

/**
 * A topic of unknown kind: its records up to the first with a fence header pass, as they would
 * in a view's partition that has seen no claim. A partition that kept an epoch was a view's when
 * it was applied: its first record waits, so that a view's partition whose kind is asked again
 * after a restart applies nothing without its epoch.
 */
function unknownTopicRecords(records: StoredRecord[], epochAtStart: number): FencedRecords {
  const at = epochAtStart >= 0 ? 0 : fenceHeaderAt(records);
  if (at < 0) return { kept: records, epochBefore: () => epochAtStart };
  return {
    kept: records.slice(0, at),
    epochBefore: () => epochAtStart,
    ...(at < records.length ? { holdAt: records[at].offset } : {}),
  };
}
