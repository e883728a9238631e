/**
 * The Kafka face of one log-node: the listener with the group coordinator's APIs, over the node's
 * in-process log contract. The log-node's lifecycle (log-node/index.ts) starts it once the node
 * is open and closes it before the partitions close, so no Kafka request outlives the log.
 */
import { resolve } from 'node:path';
import type { ApiKey } from '../../shared/api-keys.js';
import type { LogClient } from '../../shared/log-api.js';
import type { Logger } from '../../shared/logger.js';
import type { LogNodeConfig } from '../config.js';
import { defaultTopicConfigs } from '../topic-configs.js';
import { GroupCoordinator } from './group-coordinator.js';
import { coordinatorElsewhereHandlers } from './coordinator-elsewhere.js';
import { kafkaListenerDefaults } from './config.js';
import { BROKER_NODE_ID, startKafkaListener } from './listener.js';
import { brokerNodeId, kafkaPeerDefaults, KafkaPeers } from './peers.js';
import type { KafkaSaslPlain } from '../../shared/kafka-log/config.js';

/** Where the Kafka listener binds, and who may use it; null in LogNodeOptions turns it off. */
export interface KafkaFace {
  host: string;
  /** 0 picks a free port (tests). */
  port: number;
  /** SASL/PLAIN passwords, the HTTP API keys with their scopes; required off loopback. */
  apiKeys?: readonly ApiKey[];
  /** The host Metadata and FindCoordinator name; by default the address the client reached. */
  advertisedHost?: string;
  /** The port they name; by default the port listened on (behind NAT or a proxy: theirs). */
  advertisedPort?: number;
  /**
   * The Kafka listeners (host:port) of the other log-nodes when this one stores some of the
   * partitions: Metadata then names every broker and each partition's leader.
   */
  peers?: readonly string[];
}

export interface RunningKafkaFace {
  port: number;
  close(): Promise<void>;
}

export interface KafkaFaceNode {
  log: LogClient;
  /** The same log, whose appends create no topic (KafkaListenerOptions.logCreatingNothing). */
  logCreatingNothing: LogClient;
  config: LogNodeConfig;
  /** Whether this node stores partition 0, and so the internal topics. */
  hostsPartitionZero: boolean;
  logger: Logger;
}

export async function attachKafkaFace(
  face: KafkaFace,
  { log, logCreatingNothing, config, hostsPartitionZero, logger }: KafkaFaceNode,
): Promise<RunningKafkaFace> {
  const kafkaLogger = logger.child({ component: 'kafka' });
  const coordinator = new GroupCoordinator({ log, logger: kafkaLogger });
  if (hostsPartitionZero) await coordinator.load();
  const peers =
    face.peers === undefined || face.peers.length === 0
      ? null
      : new KafkaPeers(face.peers, {
          ...kafkaPeerDefaults,
          sasl: peerCredentials(face.apiKeys ?? []),
          logger: kafkaLogger,
        });
  const { hostedPartitions } = await log.cluster();
  const listener = await startKafkaListener({
    log,
    logCreatingNothing,
    logger: kafkaLogger,
    host: face.host,
    port: face.port,
    apiKeys: face.apiKeys,
    viewWriterSecret: config.clusterSecret,
    advertisedHost: face.advertisedHost,
    advertisedPort: face.advertisedPort,
    topicConfigDefaults: (topic) => defaultTopicConfigs(config, topic),
    nodeId: peers === null ? BROKER_NODE_ID : brokerNodeId(hostedPartitions),
    peers,
    logDir: resolve(config.dataDir),
    // A Kafka client's long poll ends at the log's own bound, not refused by it part way (which
    // depended on how long the fetch's first pass took): a broker honours any
    // fetch.max.wait.ms up to its own limit.
    fetchWaitMsMax: Math.min(kafkaListenerDefaults.fetchWaitMsMax, config.longPollWaitMsMax),
    batchInflatedBytesMax: config.batchInflatedBytesMax,
    batchBytesMax: config.batchBytesMax,
    recordBytesMax: config.recordBytesMax,
    recordsPerBatchMax: config.recordsPerBatchMax,
    // Committed offsets live on partition 0 of __consumer_offsets: only its node coordinates.
    handlers: hostsPartitionZero
      ? coordinator.handlers()
      : peers === null
        ? {}
        : coordinatorElsewhereHandlers(peers),
  }).catch((error: unknown) => {
    coordinator.close();
    peers?.close();
    throw error;
  });
  return {
    port: listener.port,
    async close() {
      coordinator.close();
      await listener.close();
      peers?.close();
    },
  };
}

/** A peer asks with a key that may read (Metadata's peers) and write (producer ids). */
function peerCredentials(apiKeys: readonly ApiKey[]): KafkaSaslPlain | null {
  if (apiKeys.length === 0) return null;
  const key =
    apiKeys.find((k) => k.scopes.includes('read') && k.scopes.includes('write')) ?? apiKeys[0];
  return { username: 'tailbase-log-node', password: key.key };
}
