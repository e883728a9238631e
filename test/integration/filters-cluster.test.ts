// Filters, sorting and facets (filters-suite.ts) over a cluster whose two serve-nodes each host
// half the partitions, with search pages of two hits, so every answer is merged across nodes.
import { describeFilters } from './filters-suite.js';
import { startCluster } from './gateway-harness.js';

describeFilters('filters, sorts and facets over a cluster of nodes', async () => {
  const cluster = await startCluster({ partitions: 4, gateway: { serveSearchPageMax: 2 } });
  return { url: cluster.url, partitions: 4, serveNodes: 2, stop: () => cluster.stop() };
});
