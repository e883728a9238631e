/** Partitions with their log offsets and each replica's applied offset and lag; the serve-nodes. */
import type { ClusterStatus } from './api.js';
import { RebuildControl } from './rebuild-control.js';

interface Props {
  status: ClusterStatus | null;
  error: string | null;
  updatedAt: Date | null;
}

const cell = (value: number | string | null) => (value === null ? '–' : value);

export function StatusPanel({ status, error, updatedAt }: Props) {
  const totalLag = (status?.partitions ?? [])
    .flatMap((p) => p.replicas)
    .reduce((sum, r) => sum + (r.lag ?? 0), 0);
  return (
    <section aria-labelledby="status-title">
      <h2 id="status-title">Status</h2>
      <p class="note">
        {status === null
          ? 'Reading the status…'
          : `Cluster ${status.clusterId}: ${status.serveNodes.length} serve-node(s), total lag ${totalLag} record(s).`}{' '}
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
            <caption>Partitions: log offsets, and what each serve-node has applied</caption>
            <thead>
              <tr>
                <th scope="col">Topic</th>
                <th scope="col">Partition</th>
                <th scope="col">Log start</th>
                <th scope="col">Log end</th>
                <th scope="col">Serve-node</th>
                <th scope="col">Applied</th>
                <th scope="col">Lag</th>
                <th scope="col">State</th>
              </tr>
            </thead>
            <tbody>
              {status.partitions.flatMap((p) =>
                (p.replicas.length === 0 ? [null] : p.replicas).map((r) => (
                  <tr
                    key={`${p.topic}/${p.partition}/${r?.node}`}
                    data-row={`${p.topic}/${p.partition}/${r?.node ?? '-'}`}
                  >
                    <td>{p.topic}</td>
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
                  </tr>
                )),
              )}
            </tbody>
          </table>
        </>
      )}
    </section>
  );
}
