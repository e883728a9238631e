/**
 * The frontiers a cluster's view processor publishes, as offsets committed for the views group
 * (views/README.md, Placement): for the topic of the view's version, partition p's committed
 * offset is the published frontier of source partition p (processed, and its output acknowledged)
 * and its metadata the rest of what GET /v1/views and read-your-writes need. The coordinator takes
 * a commit only from a member of the current generation, so what a processor that lost the view
 * commits is never read; one commit request carries every partition, so a reader never mixes two.
 */
import type { ViewPartitionProgress, ViewProgress } from '../shared/view-api.js';

/** What one partition's commit metadata holds (JSON). */
interface PartitionMetadata {
  /** The view topic's last offset appended in this partition that the frontiers cover; −1: none. */
  end: number;
  processed: number;
  lag: number;
  coversFrom?: number;
  resumedFrom?: number;
  /** The view's counters, in every partition's metadata (any one of them is enough). */
  refused: number;
  late: number;
}

export interface PublishedCommit {
  partition: number;
  offset: number;
  metadata: string;
}

/** The commits that publish a task's progress and view ends. */
export function publishedCommits(
  progress: ViewProgress,
  ends: ReadonlyMap<number, number>,
): PublishedCommit[] {
  return progress.frontiers.map((p) => {
    const metadata: PartitionMetadata = {
      end: ends.get(p.partition) ?? -1,
      processed: p.processed,
      lag: p.lag,
      ...(p.coversFrom === undefined ? {} : { coversFrom: p.coversFrom }),
      ...(p.resumedFrom === undefined ? {} : { resumedFrom: p.resumedFrom }),
      refused: progress.refusedRecords,
      late: progress.lateRecords,
    };
    return { partition: p.partition, offset: p.frontier, metadata: JSON.stringify(metadata) };
  });
}

/** A version's published state read back: its progress and its view ends; null when unreadable. */
export function readPublished(
  version: number,
  commits: readonly { partition: number; offset: number; metadata: string | null }[],
): { progress: ViewProgress; ends: Map<number, number> } | null {
  const frontiers: ViewPartitionProgress[] = [];
  const ends = new Map<number, number>();
  let refused = 0;
  let late = 0;
  for (const commit of [...commits].sort((a, b) => a.partition - b.partition)) {
    let metadata: PartitionMetadata;
    try {
      metadata = JSON.parse(commit.metadata ?? '') as PartitionMetadata;
    } catch {
      return null;
    }
    if (typeof metadata.end !== 'number') return null;
    if (metadata.end >= 0) ends.set(commit.partition, metadata.end);
    refused = Math.max(refused, metadata.refused);
    late = Math.max(late, metadata.late);
    frontiers.push({
      partition: commit.partition,
      frontier: commit.offset,
      lag: metadata.lag,
      processed: metadata.processed,
      ...(metadata.coversFrom === undefined ? {} : { coversFrom: metadata.coversFrom }),
      ...(metadata.resumedFrom === undefined ? {} : { resumedFrom: metadata.resumedFrom }),
    });
  }
  return {
    progress: { version, frontiers, refusedRecords: refused, lateRecords: late },
    ends,
  };
}
