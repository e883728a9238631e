/**
 * The Kafka listener's settings and limits, each named with its unit, defaulted here and enforced
 * by the listener (every one has a test in test/integration/kafka-listener.test.ts).
 */
import type { Logger } from '../../shared/logger.js';
import type { LogClient } from '../../shared/log-api.js';
import type { TopicConfigs } from '../../shared/topics.js';
import type { KafkaHandlers } from './handler.js';
import type { KafkaPeers } from './peers.js';
import { isLoopback } from '../../shared/cli-options.js';
import { REQUEST_ELEMENTS_MAX } from '../../shared/kafka/index.js';
import type { ApiKey } from '../../shared/api-keys.js';
import { BATCH_INFLATED_BYTES_MAX_DEFAULT } from '../../shared/batch-compression.js';
import { logNodeDefaults } from '../config.js';

const MiB = 1024 * 1024;

export interface KafkaListenerLimits {
  /** The largest request frame (size prefix excluded); a larger one closes the connection. */
  frameBytesMax: number;
  /**
   * The largest frame before a connection that must authenticate has (Kafka's
   * sasl.server.max.receive.size): a stranger cannot make the node buffer and decode 64 MiB.
   */
  frameBytesMaxUnauthenticated: number;
  /** Array elements one request may decode into, across its whole body (the codec's budget). */
  requestElementsMax: number;
  /** Connections open at once; one past it is accepted and closed at once. */
  connectionsMax: number;
  /**
   * Requests of one connection decoded and not yet answered; past it the socket is not read until
   * one is answered (backpressure, as Kafka's queued.max.requests).
   */
  inFlightRequestsMax: number;
  /** A connection with nothing in progress and no traffic for this long is closed. */
  idleMsMax: number;
  /** A connection that must authenticate and has not done so by then is closed. */
  authenticateMsMax: number;
  /** The longest a Fetch long-polls, whatever its maxWaitMs (at most the log's long-poll bound). */
  fetchWaitMsMax: number;
  /**
   * The most bytes of one Fetch answer and of one partition in it, whatever its maxBytes and
   * partitionMaxBytes (at most the log's per-partition read bound, readBytesMax).
   */
  fetchBytesMax: number;
  /**
   * ListOffsets by timestamp reads batches from the log start: at most this many bytes per
   * request, past which the partition answers UNKNOWN_SERVER_ERROR (and the listener logs why).
   */
  listOffsetsScanBytesMax: number;
  /** Bytes a produced batch's records may inflate to (the log's batchInflatedBytesMax). */
  batchInflatedBytesMax: number;
  /**
   * The log's batchBytesMax, recordBytesMax and recordsPerBatchMax: what Produce refuses from a
   * compressed batch's header before inflating it (the append checks them all again).
   */
  batchBytesMax: number;
  recordBytesMax: number;
  recordsPerBatchMax: number;
}

export const kafkaListenerDefaults: KafkaListenerLimits = {
  frameBytesMax: 64 * MiB,
  frameBytesMaxUnauthenticated: 512 * 1024,
  requestElementsMax: REQUEST_ELEMENTS_MAX,
  connectionsMax: 1024,
  inFlightRequestsMax: 32,
  idleMsMax: 540_000,
  authenticateMsMax: 10_000,
  fetchWaitMsMax: 10_000,
  fetchBytesMax: 4 * MiB,
  listOffsetsScanBytesMax: 64 * MiB,
  batchInflatedBytesMax: BATCH_INFLATED_BYTES_MAX_DEFAULT,
  batchBytesMax: logNodeDefaults.batchBytesMax,
  recordBytesMax: logNodeDefaults.recordBytesMax,
  recordsPerBatchMax: logNodeDefaults.recordsPerBatchMax,
};

export interface KafkaListenerOptions extends Partial<KafkaListenerLimits> {
  /** The log the listener speaks for; it reaches the log through this contract only. */
  log: LogClient;
  /**
   * The same log, whose appends create no topic: a Produce that may not create one (a view
   * processor's, or any where autoCreateTopics is off) appends through it, so a topic deleted
   * after the check is not created again by the append.
   */
  logCreatingNothing: LogClient;
  /** 127.0.0.1 by default; any other address requires SASL, so `apiKeys` must not be empty. */
  host?: string;
  /** 9092 in `tailbase start`; 0 picks a free port (tests). */
  port?: number;
  /** The host Metadata names for this broker; by default, the address the client reached. */
  advertisedHost?: string;
  /** The port Metadata names; by default, the port listened on. */
  advertisedPort?: number;
  /** SASL/PLAIN passwords (the HTTP API keys); any key makes authentication required. */
  apiKeys?: readonly ApiKey[];
  /**
   * The cluster secret: a connection that authenticates with it (sasl.ts, VIEW_WRITER_USERNAME)
   * is a view processor, which may produce to views' topics. SASL is then offered even where it
   * is not required.
   */
  viewWriterSecret?: string;
  /** Metadata creates a missing collection topic when the client allows it (Kafka's default). */
  autoCreateTopics?: boolean;
  /** A topic's configs when nothing overrides them, so DescribeConfigs can say which are defaults. */
  topicConfigDefaults: (topic: string) => TopicConfigs;
  /** More APIs (the group coordinator's), by API key; the listener's own keys cannot be replaced. */
  handlers?: KafkaHandlers;
  /** The node id Metadata gives this broker: 0 (BROKER_NODE_ID) unless the log-node splits partitions. */
  nodeId?: number;
  /** The other log-nodes of a cluster that splits the partitions; Metadata names them too. */
  peers?: KafkaPeers | null;
  /** The directory of the segment files, which DescribeLogDirs names (absolute). */
  logDir?: string;
  logger: Logger;
}

export interface KafkaListenerConfig extends KafkaListenerLimits {
  host: string;
  port: number;
  advertisedHost: string | null;
  advertisedPort: number | null;
  apiKeys: readonly ApiKey[];
  autoCreateTopics: boolean;
  /** Whether a connection must authenticate before any API but ApiVersions and SASL. */
  saslRequired: boolean;
  viewWriterSecret: string | null;
  /** Whether SASL is spoken at all: required, or offered to view processors. */
  saslOffered: boolean;
}

/** The options with their defaults, checked: a bad limit is an error at start, not at the first request. */
export function kafkaListenerConfig(options: KafkaListenerOptions): KafkaListenerConfig {
  const limits = { ...kafkaListenerDefaults };
  for (const name of Object.keys(limits) as (keyof KafkaListenerLimits)[]) {
    const value = options[name];
    if (value === undefined) continue;
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new Error(`Kafka listener ${name} must be a positive integer, not ${String(value)}`);
    }
    limits[name] = value;
  }
  const host = options.host ?? '127.0.0.1';
  const apiKeys = options.apiKeys ?? [];
  if (!isLoopback(host) && apiKeys.length === 0) {
    throw new Error(
      `the Kafka listener on ${host} (not loopback) requires SASL/PLAIN: give it API keys (--api-keys), or listen on 127.0.0.1`,
    );
  }
  return {
    ...limits,
    host,
    port: options.port ?? 9092,
    advertisedHost: options.advertisedHost ?? null,
    advertisedPort: options.advertisedPort ?? null,
    apiKeys,
    autoCreateTopics: options.autoCreateTopics ?? true,
    saslRequired: !isLoopback(host) || apiKeys.length > 0,
    viewWriterSecret: options.viewWriterSecret || null,
    saslOffered: !isLoopback(host) || apiKeys.length > 0 || Boolean(options.viewWriterSecret),
  };
}
