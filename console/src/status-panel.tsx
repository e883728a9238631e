/**
 * The serve-nodes, then one row a collection (its log end, lag and state), each expandable to its
 * partitions with their log offsets and each replica's applied offset and lag. Internal topics
 * sit in one row of their own, collapsed, out of the lag sum: twenty collections stay one screen.
 */
import { useState } from 'preact/hooks';
import { formatBytes } from '../../client/format.js';
import type { ClusterStatus, CollectionSummary, PartitionStatus } from './api.js';
import { DropControl } from './drop-control.js';
import { RebuildControl } from './rebuild-control.js';

interface Props {
  status: ClusterStatus | null;
  /**
   * Collection → its documents and bytes on disk (GET /v1/collections, read less often than the
   * status).
   */
  listed: ReadonlyMap<string, CollectionSummary>;
  error: string | null;
  updatedAt: Date | null;
  onDropped: () => void;
}

/** The row that holds the internal topics' partitions (no collection can be named so). */
const INTERNAL_ROW = 'internal topics';

const cell = (value: number | string | null) => (value === null ? '–' : value);

/** The total, with each part in the tooltip; a part the cluster cannot say reads "unknown". */
function bytesCell(bytes: CollectionSummary['bytes'] | undefined) {
  if (bytes === undefined) return <td class="num" data-col="bytes" />;
  const part = (value: number | null) => formatBytes(value) ?? 'unknown';
  const parts = `log ${part(bytes.log)}, LMDB ${part(bytes.lmdb)}, SQLite ${part(bytes.sqlite)}`;
  return (
    <td class="num" data-col="bytes" title={parts}>
      {formatBytes(bytes.total) ?? 'unknown'}
    </td>
  );
}

export function StatusPanel({ status, listed, error, updatedAt, onDropped }: Props) {
  const [expanded, setExpanded] = useState<ReadonlySet<string>>(new Set());
  const toggle = (name: string) => {
    const next = new Set(expanded);
    if (!next.delete(name)) next.add(name);
    setExpanded(next);
  };
  const internal = (status?.partitions ?? []).filter((p) => p.internal);
  return (
    <section aria-labelledby="status-title">
      <h2 id="status-title">Status</h2>
      <p class="note">
        {status === null
          ? 'Reading the status…'
          : `Cluster ${status.clusterId}: ${status.collections.length} collection(s), ${status.serveNodes.length} serve-node(s), total lag ${status.lagRecords} record(s).`}{' '}
        {updatedAt !== null && <span>Updated {updatedAt.toLocaleTimeString()}.</span>}
      </p>
      {error !== null && (
        <p role="alert" class="error">
          Status unavailable: {error}
        </p>
      )}
      {status !== null && (
        <>
          <table>
            <caption>Serve-nodes</caption>
            <thead>
              <tr>
                <th scope="col">Node</th>
                <th scope="col">Id</th>
                <th scope="col">Up</th>
                <th scope="col">Ready</th>
                <th scope="col">Partitions</th>
                <th scope="col">Re-indexing</th>
                <th scope="col">Rebuild</th>
              </tr>
            </thead>
            <tbody>
              {status.serveNodes.map((node) => (
                <tr key={node.node}>
                  <th scope="row">{node.node}</th>
                  <td>{cell(node.nodeId)}</td>
                  <td>{node.up ? 'yes' : 'no'}</td>
                  <td>{node.ready ? 'yes' : 'no'}</td>
                  <td>{node.partitions.join(', ')}</td>
                  <td>
                    {node.reindexing.length === 0
                      ? '–'
                      : node.reindexing
                          .map((r) => `${r.collection} ${r.copied} / ${r.documents}`)
                          .join(', ')}
                  </td>
                  <td>
                    <RebuildControl node={node.node} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <table class="partitions">
            <caption>Collections: expand one for its partitions and each replica</caption>
            <thead>
              <tr>
                <th scope="col">Collection</th>
                <th scope="col">Documents</th>
                <th scope="col">On disk</th>
                <th scope="col">Partition(s)</th>
                <th scope="col">Log start</th>
                <th scope="col">Log end</th>
                <th scope="col">Serve-node</th>
                <th scope="col">Applied</th>
                <th scope="col">Lag</th>
                <th scope="col">State</th>
                <th scope="col">Drop</th>
              </tr>
            </thead>
            <tbody>
              {status.collections.flatMap((c) => [
                <tr key={c.collection} data-collection={c.collection} class="collection">
                  <th scope="row">
                    <ExpandButton
                      name={c.collection}
                      open={expanded.has(c.collection)}
                      onToggle={toggle}
                    />
                  </th>
                  <td class="num" data-col="documents">
                    {cell(listed.get(c.collection)?.documents ?? null)}
                  </td>
                  {bytesCell(listed.get(c.collection)?.bytes)}
                  <td class="num">{c.partitions}</td>
                  <td />
                  <td class="num" data-col="end">
                    {c.endOffset}
                  </td>
                  <td />
                  <td />
                  <td class={`num${c.lagRecords > 0 ? ' lagging' : ''}`} data-col="lag">
                    {c.lagRecords}
                  </td>
                  <td data-col="state">{c.state}</td>
                  <td>
                    <DropControl collection={c.collection} onDropped={onDropped} />
                  </td>
                </tr>,
                ...(expanded.has(c.collection)
                  ? partitionRows(status.partitions.filter((p) => p.topic === c.collection))
                  : []),
              ])}
              {internal.length > 0 && (
                <tr data-collection={INTERNAL_ROW} class="collection">
                  <th scope="row" colSpan={11}>
                    <ExpandButton
                      name={INTERNAL_ROW}
                      open={expanded.has(INTERNAL_ROW)}
                      onToggle={toggle}
                    />{' '}
                    <span class="note">(not in the lag sum)</span>
                  </th>
                </tr>
              )}
              {expanded.has(INTERNAL_ROW) && partitionRows(internal)}
            </tbody>
          </table>
        </>
      )}
    </section>
  );
}

function ExpandButton(props: { name: string; open: boolean; onToggle: (name: string) => void }) {
  return (
    <button
      type="button"
      class="expand"
      aria-expanded={props.open}
      onClick={() => props.onToggle(props.name)}
    >
      {props.open ? '▾' : '▸'} {props.name}
    </button>
  );
}

function partitionRows(partitions: readonly PartitionStatus[]) {
  return partitions.flatMap((p) =>
    (p.replicas.length === 0 ? [null] : p.replicas).map((r) => (
      <tr
        key={`${p.topic}/${p.partition}/${r?.node}`}
        data-row={`${p.topic}/${p.partition}/${r?.node ?? '-'}`}
        class="partition"
      >
        <td>{p.topic}</td>
        <td />
        <td />
        <td class="num">{p.partition}</td>
        <td class="num">{p.logStartOffset}</td>
        <td class="num" data-col="end">
          {p.endOffset}
        </td>
        <td class="num">{cell(r?.node ?? null)}</td>
        <td class="num" data-col="applied">
          {cell(r?.applied ?? null)}
        </td>
        <td class={`num${(r?.lag ?? 0) > 0 ? ' lagging' : ''}`} data-col="lag">
          {cell(r?.lag ?? null)}
        </td>
        <td>{cell(r === null ? null : r.up ? r.state : 'down')}</td>
        <td />
      </tr>
    )),
  );
}
