// The public API suite (api-suite.ts) over a cluster whose gateway and serve-nodes reach the log
// only by the Kafka protocol (`--log kafka://...`): three log-nodes splitting six partitions as
// compose.yaml's do, each told the others' Kafka listeners, two serve-nodes hosting half the
// partitions each, and the gateway; once with the gateway's batches plain and once gzip
// (`--log-compression gzip`: the log-nodes store gzip, the serve-nodes and the change feed
// inflate what they fetch).
import { openLogNode, type OpenLogNode } from '../../log-node/index.js';
import { startGateway } from '../../gateway/index.js';
import { startServeNode, type RunningServeNode } from '../../serve-node/index.js';
import { freePort } from '../harness/free-port.js';
import { tempDir } from '../harness/temp-dir.js';
import { describeApi } from './api-suite.js';
import { silent } from './gateway-harness.js';

const PARTITIONS = 6;
const SPLIT = [
  [0, 3],
  [1, 4],
  [2, 5],
];

for (const logCompression of ['none', 'gzip'] as const) {
  describeApi(
    `the API over log-nodes reached by the Kafka protocol (log compression ${logCompression})`,
    async () => {
      const dirs = [0, 1, 2, 3, 4].map((i) => tempDir(`kafka-e2e-${i}`));
      const ports = [await freePort(), await freePort(), await freePort()];
      const logNodes: OpenLogNode[] = await Promise.all(
        SPLIT.map((hostedPartitions, i) =>
          openLogNode({
            dataDir: dirs[i].path,
            partitions: PARTITIONS,
            hostedPartitions,
            clusterId: '01JFBK3ZQ8Y5V6N7W2X4C9D0E1',
            logger: silent,
            kafka: {
              host: '127.0.0.1',
              port: ports[i],
              peers: ports.filter((_, j) => j !== i).map((port) => `127.0.0.1:${port}`),
            },
          }),
        ),
      );
      // Bootstrapped on two of the three: the third is learned from Metadata.
      const logUrl = `kafka://127.0.0.1:${ports[1]},127.0.0.1:${ports[2]}`;
      const serves: RunningServeNode[] = [];
      for (const [i, hosted] of [
        [0, 1, 2],
        [3, 4, 5],
      ].entries()) {
        serves.push(
          await startServeNode({
            dataDir: dirs[3 + i].path,
            port: 0,
            logUrls: [logUrl],
            partitions: hosted,
            logger: silent,
          }),
        );
      }
      const gateway = await startGateway(
        {
          logUrls: [logUrl],
          serveUrls: serves.map((s) => s.url),
          topologyRefreshMs: 200,
          logCompression,
        },
        { logger: silent },
      );
      return {
        url: gateway.url,
        partitions: PARTITIONS,
        serveNodes: 2,
        logCompression,
        async stop() {
          await gateway.stop();
          await Promise.all(serves.map((s) => s.stop()));
          await Promise.all(logNodes.map((node) => node.stop()));
          for (const dir of dirs) dir.cleanup();
        },
      };
    },
  );
}
