/** What every part of the Kafka log client shares: its settings, its connections, its metadata. */
import type { BrokerPool } from './broker-pool.js';
import type { ClusterMetadata } from './cluster-metadata.js';
import type { KafkaLogConfig } from './config.js';

export interface ClientParts {
  readonly config: KafkaLogConfig;
  readonly pool: BrokerPool;
  readonly metadata: ClusterMetadata;
}

/** A part of the client (its topics, its producer, ...), built on the parts they share. */
export abstract class ClientPart {
  protected readonly config: KafkaLogConfig;
  protected readonly pool: BrokerPool;
  protected readonly metadata: ClusterMetadata;

  constructor(parts: ClientParts) {
    this.config = parts.config;
    this.pool = parts.pool;
    this.metadata = parts.metadata;
  }
}
