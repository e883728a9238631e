/**
 * The Kafka listener: a TCP server speaking Kafka's protocol over the log contract
 * (shared/log-api.ts), so any Kafka client can produce to and consume from the log. It binds
 * 127.0.0.1 unless told otherwise; anywhere else it requires SASL/PLAIN with the API keys.
 */
import net from 'node:net';
import { ApiKey } from '../../shared/kafka/index.js';
import { apiVersionsHandler, SASL_API_KEYS } from './api-versions.js';
import {
  kafkaListenerConfig,
  type KafkaListenerConfig,
  type KafkaListenerOptions,
} from './config.js';
import { KafkaConnection } from './connection.js';
import { createTopicsHandler } from './create-topics.js';
import { deleteTopicsHandler } from './delete-topics.js';
import { describeConfigsHandler } from './describe-configs.js';
import { describeLogDirsHandler } from './describe-log-dirs.js';
import { fetchHandler } from './fetch.js';
import type { KafkaHandlers } from './handler.js';
import type { HandlerDeps } from './handler-deps.js';
import { incrementalAlterConfigsHandler } from './incremental-alter-configs.js';
import { initProducerIdHandler } from './init-producer-id.js';
import { listOffsetsHandler } from './list-offsets.js';
import { metadataHandler } from './metadata.js';
import { produceHandler } from './produce.js';

/** The node id of a log-node that stores every partition (or partition 0 among peers). */
export const BROKER_NODE_ID = 0;

export interface KafkaListener {
  host: string;
  /** The port bound (the one asked for, or the one picked for 0). */
  port: number;
  config: KafkaListenerConfig;
  /** Connections open now. */
  connections(): number;
  /** Stops accepting, closes every connection, and resolves once the server is closed. */
  close(): Promise<void>;
}

/** The listener's own APIs (ApiVersions and SASL are added by startKafkaListener). */
export function dataPathHandlers(deps: HandlerDeps): KafkaHandlers {
  return {
    [ApiKey.Produce]: produceHandler(deps),
    [ApiKey.Fetch]: fetchHandler(deps),
    [ApiKey.ListOffsets]: listOffsetsHandler(deps),
    [ApiKey.Metadata]: metadataHandler(deps),
    [ApiKey.InitProducerId]: initProducerIdHandler(deps),
    [ApiKey.CreateTopics]: createTopicsHandler(deps),
    [ApiKey.DeleteTopics]: deleteTopicsHandler(deps),
    [ApiKey.DescribeConfigs]: describeConfigsHandler(deps),
    [ApiKey.DescribeLogDirs]: describeLogDirsHandler(deps),
    [ApiKey.IncrementalAlterConfigs]: incrementalAlterConfigsHandler(deps),
  };
}

export async function startKafkaListener(options: KafkaListenerOptions): Promise<KafkaListener> {
  const config = kafkaListenerConfig(options);
  const logger = options.logger.child({ component: 'kafka' });
  const deps: HandlerDeps = {
    log: options.log,
    logCreatingNothing: options.logCreatingNothing,
    config,
    peers: options.peers ?? null,
    topicConfigDefaults: options.topicConfigDefaults,
    logDir: options.logDir ?? null,
    logger,
  };
  const handlers: KafkaHandlers = { ...options.handlers, ...dataPathHandlers(deps) };
  const served = new Set([
    ...Object.keys(handlers).map(Number),
    ApiKey.ApiVersions,
    ...(config.saslOffered ? SASL_API_KEYS : []),
  ]);
  handlers[ApiKey.ApiVersions] = apiVersionsHandler(served);

  const connections = new Set<KafkaConnection>();
  let nextConnectionId = 1;
  const server = net.createServer({ noDelay: true }, (socket) => {
    if (connections.size >= config.connectionsMax) {
      logger.warn(
        { limit: 'connectionsMax', max: config.connectionsMax, remote: socket.remoteAddress },
        'Kafka connection refused: connectionsMax reached',
      );
      socket.destroy();
      return;
    }
    const connection = new KafkaConnection({
      id: nextConnectionId++,
      socket,
      config,
      handlers,
      broker: {
        nodeId: options.nodeId ?? BROKER_NODE_ID,
        host: config.advertisedHost ?? socket.localAddress ?? config.host,
        port: config.advertisedPort ?? port,
      },
      logger,
    });
    connections.add(connection);
    void connection.closed.then(() => connections.delete(connection));
  });
  const port = await listen(server, config.host, config.port);
  server.on('error', (error) => logger.error({ err: error }, 'Kafka listener error'));
  logger.info({ host: config.host, port, sasl: config.saslRequired }, 'Kafka listener ready');
  let closing: Promise<void> | null = null;
  return {
    host: config.host,
    port,
    config,
    connections: () => connections.size,
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const connection of connections) connection.close('the listener is closing');
      });
      return closing;
    },
  };
}

function listen(server: net.Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      reject(
        error.code === 'EADDRINUSE'
          ? new Error(
              `the Kafka port ${port} on ${host} is in use: choose another with --kafka-port, or --kafka-port off`,
              { cause: error },
            )
          : error,
      );
    });
    server.listen({ host, port }, () => {
      const address = server.address();
      resolve(typeof address === 'object' && address !== null ? address.port : port);
    });
  });
}
