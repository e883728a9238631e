/**
 * The partition writers, one per (topic, partition) written through this gateway, created on the
 * first write to it: collections come and go as topics, so there is no fixed set to build at start.
 * Each writer asks the log for its own producer identity.
 */
import { unavailable } from '../shared/errors.js';
import type { LogClient } from '../shared/log-api.js';
import type { Logger } from '../shared/logger.js';
import type { WriterConfig } from './config.js';
import { PartitionWriter, type BatchObserver } from './partition-writer.js';

export class WriterPool {
  private readonly writers = new Map<string, Map<number, PartitionWriter>>();
  private closed = false;

  constructor(
    private readonly log: LogClient,
    private readonly config: WriterConfig,
    private readonly logger: Logger,
    private readonly observe: BatchObserver,
    /** The codec of every batch the writers append (shared/batch-compression.ts). */
    private readonly codec: number,
  ) {}

  /** The topic-partition's writer; 503 `shutting_down` once the pool is closing. */
  writer(topic: string, partition: number): PartitionWriter {
    if (this.closed) throw unavailable('shutting_down', 'the gateway is shutting down');
    let partitions = this.writers.get(topic);
    if (partitions === undefined) this.writers.set(topic, (partitions = new Map()));
    let writer = partitions.get(partition);
    if (writer === undefined) {
      writer = new PartitionWriter(
        topic,
        partition,
        this.log,
        this.config,
        this.logger,
        this.observe,
        this.codec,
      );
      partitions.set(partition, writer);
    }
    return writer;
  }

  /** The writers (one per partition written through this gateway) and the bytes they queue now. */
  pending(): { writers: number; bytes: number } {
    let writers = 0;
    let bytes = 0;
    for (const partitions of this.writers.values()) {
      for (const writer of partitions.values()) {
        writers += 1;
        bytes += writer.pendingBytes;
      }
    }
    return { writers, bytes };
  }

  /** Stops taking writes and resolves once every writer has answered what it queued. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(
      [...this.writers.values()].flatMap((partitions) =>
        [...partitions.values()].map((writer) => writer.close()),
      ),
    );
  }
}
