/**
 * Reads GET /v1/status defensively (fields may be missing or renamed while the gateway evolves)
 * into rows: one per topic-partition and replica (a collection is a topic), one per serve-node.
 */
import { formatPartitionList, formatTable } from './format.js';
import { asObject, bool, type Loose, num, objects, text } from './loose-json.js';

export interface ReplicaRow {
  /** The collection (or internal topic); null from a gateway that does not say. */
  topic: string | null;
  /** An internal topic (settings, consumer offsets); null from a gateway that does not say. */
  internal: boolean | null;
  partition: number;
  logStartOffset: number | null;
  endOffset: number | null;
  node: string | null;
  up: boolean | null;
  applied: number | null;
  lag: number | null;
  state: string | null;
}

export interface ServeNodeRow {
  node: string;
  nodeId: string | null;
  up: boolean | null;
  ready: boolean | null;
  partitions: number[];
}

/** One collection, its partitions' replicas summed up by the gateway. */
export interface CollectionRow {
  collection: string;
  partitions: number | null;
  endOffset: number | null;
  lagRecords: number | null;
  state: string | null;
}

/** One view: its lag, and a redefinition's progress. */
export interface ViewRow {
  view: string;
  version: number | null;
  lagRecords: number | null;
  /** `version M processed/total`, or null when none is being rebuilt. */
  rebuilding: string | null;
}

export interface StatusView {
  clusterId: string | null;
  /** Records not applied over the collections (internal topics left out); null when not said. */
  lagRecords: number | null;
  collections: CollectionRow[];
  views: ViewRow[];
  replicas: ReplicaRow[];
  serveNodes: ServeNodeRow[];
}

export function readStatus(body: unknown): StatusView {
  const root = asObject(body);
  const replicas: ReplicaRow[] = [];
  for (const p of objects(root.partitions)) {
    const partition = num(p.partition);
    if (partition === null) continue;
    const base = {
      topic: text(p.topic ?? p.collection),
      internal: bool(p.internal),
      partition,
      logStartOffset: num(p.logStartOffset),
      endOffset: num(p.endOffset ?? p.logEndOffset),
    };
    const hosts = objects(p.replicas ?? p.serveNodes);
    if (hosts.length === 0) {
      replicas.push({ ...base, node: null, up: null, applied: null, lag: null, state: null });
    }
    for (const r of hosts) {
      const applied = num(r.applied);
      const lag =
        num(r.lag) ??
        (applied !== null && base.endOffset !== null
          ? Math.max(base.endOffset - applied, 0)
          : null);
      replicas.push({
        ...base,
        node: text(r.node ?? r.nodeId ?? r.url),
        up: bool(r.up),
        applied,
        lag,
        state: text(r.state),
      });
    }
  }
  const serveNodes = objects(root.serveNodes).map((n, index) => ({
    node: text(n.node ?? n.url) ?? String(index),
    nodeId: text(n.nodeId),
    up: bool(n.up),
    ready: bool(n.ready),
    partitions: (Array.isArray(n.partitions) ? n.partitions : [])
      .map((p: unknown) => (typeof p === 'object' && p !== null ? (p as Loose).partition : p))
      .filter((p: unknown): p is number => typeof p === 'number'),
  }));
  const collections = objects(root.collections).flatMap((c) => {
    const collection = text(c.collection);
    if (collection === null) return [];
    return [
      {
        collection,
        partitions: num(c.partitions),
        endOffset: num(c.endOffset),
        lagRecords: num(c.lagRecords),
        state: text(c.state),
      },
    ];
  });
  const views = objects(root.views).flatMap((v) => {
    const view = text(v.view);
    if (view === null) return [];
    const rebuild = v.rebuilding == null ? null : asObject(v.rebuilding);
    const progress =
      rebuild === null
        ? null
        : `version ${num(rebuild.version) ?? '?'} ${num(rebuild.processed) ?? '?'}/${num(rebuild.total) ?? '?'}`;
    return [{ view, version: num(v.version), lagRecords: num(v.lagRecords), rebuilding: progress }];
  });
  return {
    clusterId: text(root.clusterId),
    lagRecords: num(root.lagRecords),
    collections,
    views,
    replicas,
    serveNodes,
  };
}

const yesNo = (value: boolean | null) => (value === null ? null : value ? 'yes' : 'no');

export function formatStatus(view: StatusView): string {
  const lines: string[] = [];
  if (view.clusterId !== null) {
    const lag = view.lagRecords === null ? '' : `, ${view.lagRecords} record(s) behind`;
    lines.push(`cluster ${view.clusterId}${lag}\n`);
  }
  if (view.collections.length > 0) {
    lines.push(
      formatTable(
        ['COLLECTION', 'PARTITIONS', 'LOG END', 'LAG', 'STATE'],
        view.collections.map((c) => [
          c.collection,
          c.partitions,
          c.endOffset,
          c.lagRecords,
          c.state,
        ]),
      ) + '\n',
    );
  }
  if (view.views.length > 0) {
    lines.push(
      formatTable(
        ['VIEW', 'VERSION', 'LAG', 'REBUILD'],
        view.views.map((v) => [v.view, v.version, v.lagRecords, v.rebuilding ?? '-']),
      ) + '\n',
    );
  }
  lines.push(
    formatTable(
      ['TOPIC', 'PARTITION', 'LOG START', 'LOG END', 'NODE', 'UP', 'APPLIED', 'LAG', 'STATE'],
      view.replicas.map((r) => [
        r.internal === true ? `${r.topic} (internal)` : r.topic,
        r.partition,
        r.logStartOffset,
        r.endOffset,
        r.node,
        yesNo(r.up),
        r.applied,
        r.lag,
        r.state,
      ]),
    ),
  );
  if (view.serveNodes.length > 0) {
    lines.push(
      '\n' +
        formatTable(
          ['NODE', 'NODE ID', 'UP', 'READY', 'PARTITIONS'],
          view.serveNodes.map((n) => [
            n.node,
            n.nodeId,
            yesNo(n.up),
            yesNo(n.ready),
            formatPartitionList(n.partitions),
          ]),
        ),
    );
  }
  return lines.join('');
}
