/**
 * The gateway: the public HTTP API. `startGateway` learns the cluster from the log-node, the
 * partitions each serve-node hosts, and listens; `createGatewayApp` is the app alone (for tests
 * through `app.request` and for the embedded single-process mode).
 */
import { isLoopback } from '../shared/cli-options.js';
import { listen } from '../shared/http-server.js';
import type { ClusterInfo, LogClient } from '../shared/log-api.js';
import { KafkaLogClient } from '../shared/kafka-log/index.js';
import { connectLog, type ConnectedLog } from '../shared/log-connect.js';
import { ClusterFrontiers } from '../views/cluster-frontiers.js';
import { createLogger, type Logger } from '../shared/logger.js';
import { type ServeClient } from '../shared/serve-api.js';
import type { ViewProcessing } from '../shared/view-api.js';
import { HttpServeClient } from '../shared/http-serve-client.js';
import { createGatewayApp } from './app.js';
import { checkAgainstLog, resolveGatewayConfig, type GatewayConfigInput } from './config.js';
import { closeGatewayServices, createGatewayServices, type GatewayServices } from './services.js';

export { createGatewayApp } from './app.js';
export * from './config.js';
export { createGatewayServices, closeGatewayServices, type GatewayServices } from './services.js';
export { TOKEN_HEADER } from './consistency.js';

export interface GatewayHandle {
  url: string;
  services: GatewayServices;
  stop(): Promise<void>;
}

export interface GatewayClients {
  log?: LogClient;
  serve?: ServeClient[];
  logger?: Logger;
  /** The view processors, where they run beside this gateway (`tailbase start`). */
  views?: ViewProcessing;
}

export async function startGateway(
  input: GatewayConfigInput,
  clients: GatewayClients = {},
): Promise<GatewayHandle> {
  const config = resolveGatewayConfig(input);
  if (config.apiKeys.length === 0 && !isLoopback(config.host)) {
    throw new Error(`refusing to bind ${config.host} without API keys: set TAILBASE_API_KEYS`);
  }
  if (config.logUrls.length === 0 && clients.log === undefined) {
    throw new Error('the gateway needs a log-node URL');
  }
  const logger = clients.logger ?? createLogger('gateway');
  const secret = { clusterSecret: config.clusterSecret };
  const connected: ConnectedLog = clients.log
    ? { log: clients.log, close: () => undefined }
    : await connectLog(config.logUrls, {
        kafka: config.kafka,
        logger,
        connectWaitMs: config.startWaitMsMax,
        appendRequestBytesMax: config.appendRequestBytesMax,
      });
  const { log } = connected;
  // A cluster's view processors run on its serve-nodes: their frontiers come through the log.
  const frontiers =
    clients.views === undefined && log instanceof KafkaLogClient
      ? new ClusterFrontiers(log, logger.child({ role: 'views' })).start()
      : null;
  let services: GatewayServices | null = null;
  let listener: Awaited<ReturnType<typeof listen>>;
  let cluster: ClusterInfo;
  try {
    cluster = await log.cluster();
    if (cluster.limits) checkAgainstLog(config, cluster.limits);
    const serve =
      clients.serve ??
      config.serveUrls.map(
        (url) =>
          new HttpServeClient(url, {
            ...secret,
            getBatchKeysMax: config.serveGetBatchKeysMax,
            answerMsMax: config.serveAnswerMsMax,
          }),
      );
    services = createGatewayServices(
      config,
      cluster,
      log,
      serve,
      logger,
      clients.views ?? frontiers ?? undefined,
    );
    await services.topology.refresh();
    services.topology.start();
    listener = await listen(createGatewayApp(services), config.host, config.port, {
      answerWaitMsMax: config.closeAnswerWaitMsMax,
    });
  } catch (error) {
    // What it opened is closed: the log's connections, the topology's timer.
    if (services !== null) await closeGatewayServices(services);
    await frontiers?.stop();
    connected.close();
    throw error;
  }
  logger.info({ url: listener.url, partitions: cluster.partitions }, 'gateway listening');
  return {
    url: listener.url,
    services,
    async stop() {
      // Writes already taken are appended and answered before the streams are cut.
      await listener.close(() => closeGatewayServices(services));
      await frontiers?.stop();
      connected.close();
    },
  };
}
