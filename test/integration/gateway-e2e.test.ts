// The public API suite (api-suite.ts) over a cluster: one log-node, two serve-nodes each hosting
// half the partitions, a gateway on a loopback port, with tiny batch bounds so batched reads,
// multi-partition appends and each node's search hits are split on every test.
import { describeApi } from './api-suite.js';
import { startCluster } from './gateway-harness.js';

describeApi('the API over a cluster of nodes', async () => {
  const cluster = await startCluster({
    partitions: 4,
    gateway: { serveGetBatchKeysMax: 2, appendRequestBytesMax: 512, serveSearchPageMax: 2 },
  });
  return { url: cluster.url, partitions: 4, serveNodes: 2, stop: () => cluster.stop() };
});
