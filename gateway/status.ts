/**
 * GET /v1/status: every topic-partition of the log with each replica's applied offset and lag,
 * the serve-nodes, and one row a collection. Internal topics (`__tailbase_settings`,
 * `__consumer_offsets`) are listed and marked `internal`, and left out of the sums (`lagRecords`,
 * the collections' rows): they hold no documents, and `__consumer_offsets` has no replica at all.
 */
import type { PartitionOffsets } from '../shared/log-api.js';
import { tailbaseVersion } from '../shared/package-root.js';
import type { MemoryBound } from '../shared/serve-api.js';
import { isCollectionTopic } from '../shared/topics.js';
import type { Status } from './api/index.js';
import type { ServeTopology } from './topology.js';

type PartitionRow = Status['partitions'][number];
type CollectionState = Status['collections'][number]['state'];

/** The worst state a collection's replicas are in, worst first. */
const STATES_WORST_FIRST: readonly CollectionState[] = [
  'down',
  'rebuilding',
  'replaying',
  'tailing',
];

export function clusterStatus(
  clusterId: string,
  offsets: readonly PartitionOffsets[],
  topology: ServeTopology,
  /** The gateway's own caches and buffers (memory-bounds.ts). */
  memory: MemoryBound[],
  views: Status['views'] = [],
): Status {
  const ordered = [...offsets].sort(
    (a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition,
  );
  // Each node's partition statuses by topic and partition, so a row finds its own in one lookup.
  const statusOf = topology.nodes.map(
    (node) =>
      new Map(node.status?.partitions.map((s) => [`${s.partition}:${s.topic}`, s] as const)),
  );
  const partitions: PartitionRow[] = ordered.map(
    ({ topic, partition, logStartOffset, endOffset }) => ({
      topic,
      partition,
      internal: !isCollectionTopic(topic),
      logStartOffset,
      endOffset,
      replicas: topology.nodes
        .map((node, i) => ({
          node,
          status: statusOf[i].get(`${partition}:${topic}`),
        }))
        // A collection's partition is on the nodes hosting its number, tailing it yet or not;
        // an internal topic's on the nodes that tail it.
        .filter(({ node, status }) =>
          isCollectionTopic(topic) ? node.hosted.has(partition) : status !== undefined,
        )
        .map(({ node, status }) => ({
          node: node.index,
          up: topology.isUp(node),
          applied: status?.applied ?? null,
          lag: status === undefined ? null : Math.max(0, endOffset - status.applied),
          state: status?.state ?? null,
        })),
    }),
  );
  const serveNodes = topology.nodes.map((node) => ({
    node: node.index,
    nodeId: node.status?.nodeId ?? null,
    up: topology.isUp(node),
    ready: node.status?.ready ?? false,
    partitions: [...node.hosted].sort((a, b) => a - b),
    limitConflicts: node.limitConflicts,
    reindexing: node.status?.reindexing ?? [],
    segmentMerges: node.status?.segmentMerges ?? [],
    topkMerges: node.status?.topkMerges ?? false,
    freePages: node.status?.freePages ?? 0,
    memory: node.status?.memory ?? [],
  }));
  const collections = collectionRows(partitions.filter((row) => !row.internal));
  return {
    clusterId,
    version: tailbaseVersion(),
    lagRecords: collections.reduce((sum, row) => sum + row.lagRecords, 0),
    ready: serveNodes.every((node) => node.up && node.ready),
    collections,
    views,
    partitions,
    memory,
    serveNodes,
  };
}

function collectionRows(partitions: readonly PartitionRow[]): Status['collections'] {
  const rows = new Map<string, Status['collections'][number]>();
  for (const { topic, endOffset, replicas } of partitions) {
    let row = rows.get(topic);
    if (row === undefined) {
      row = { collection: topic, partitions: 0, endOffset: 0, lagRecords: 0, state: 'tailing' };
      rows.set(topic, row);
    }
    row.partitions += 1;
    row.endOffset += endOffset;
    for (const replica of replicas) {
      row.lagRecords += replica.lag ?? 0;
      const state = replicaState(replica);
      if (STATES_WORST_FIRST.indexOf(state) < STATES_WORST_FIRST.indexOf(row.state)) {
        row.state = state;
      }
    }
  }
  return [...rows.values()];
}

function replicaState(replica: PartitionRow['replicas'][number]): CollectionState {
  if (!replica.up) return 'down';
  if (replica.state === 'rebuilding' || replica.state === 'stopped') return 'rebuilding';
  if (replica.state === 'replaying' || (replica.lag ?? 0) > 0) return 'replaying';
  return 'tailing';
}
