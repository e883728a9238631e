/**
 * A log-node: the partitions of one data directory, the node-wide bounds (long-polls), and the
 * background work (compaction, retention) that runs over them.
 */
import path from 'node:path';
import { badRequest, TailbaseError } from '../shared/errors.js';
import type { ClusterInfo } from '../shared/log-api.js';
import { checkInteger } from '../shared/query-params.js';
import type { Logger } from '../shared/logger.js';
import type { Clock } from './clock.js';
import type { ClusterMeta } from './cluster-meta.js';
import type { LogNodeConfig } from './config.js';
import { partitionFailed, PartitionLog, type PartitionReadResult } from './partition-log.js';

type PartitionSlot =
  | { log: PartitionLog; error?: undefined }
  | { log?: undefined; error: Error }
  | { log?: undefined; error?: undefined; hosted: false };

export interface PartitionStatus {
  partition: number;
  logStartOffset: number | null;
  endOffset: number | null;
  sizeBytes: number;
  segments: number;
  producers: number;
  truncatedBytesOnLoad: number;
  error?: string;
}

export class LogNode {
  readonly config: LogNodeConfig;
  readonly meta: ClusterMeta;
  private readonly slots: PartitionSlot[];
  private readonly logger: Logger;
  private longPolls = 0;
  closing = false;

  constructor(config: LogNodeConfig, meta: ClusterMeta, clock: Clock, logger: Logger) {
    this.config = config;
    this.meta = meta;
    this.logger = logger;
    this.slots = [];
    const hosted = new Set(meta.hostedPartitions);
    for (let p = 0; p < meta.partitions; p++) {
      if (!hosted.has(p)) {
        this.slots.push({ hosted: false });
        continue;
      }
      const dir = path.join(config.dataDir, 'partitions', String(p));
      try {
        this.slots.push({ log: PartitionLog.open(p, dir, config, clock, logger) });
      } catch (error) {
        logger.error({ partition: p, err: error }, 'partition failed to open; it stays stopped');
        this.slots.push({ error: error as Error });
      }
    }
  }

  /** The open partition named by a route parameter; 400 for a bad number, 503 if it failed. */
  partition(param: string): PartitionLog {
    if (!/^\d+$/.test(param) || Number(param) >= this.slots.length) {
      throw badRequest(
        'invalid_partition',
        `partition must be an integer from 0 to ${this.slots.length - 1}`,
        {
          partitions: this.slots.length,
        },
      );
    }
    const slot = this.slots[Number(param)];
    if (!slot.log && !slot.error) {
      throw new TailbaseError(
        404,
        'partition_not_hosted',
        `partition ${param} lives on another log-node`,
        {
          partition: Number(param),
          hostedPartitions: this.meta.hostedPartitions,
        },
      );
    }
    if (slot.error) throw partitionFailed(Number(param));
    return slot.log;
  }

  /** Who this node is and what it stores, with the batch limits a writer checks its own against. */
  clusterInfo(): ClusterInfo {
    return {
      clusterId: this.meta.clusterId,
      partitions: this.meta.partitions,
      hostedPartitions: this.meta.hostedPartitions,
      nodeId: this.meta.nodeId,
      limits: {
        batchBytesMax: this.config.batchBytesMax,
        recordBytesMax: this.config.recordBytesMax,
        recordsPerBatchMax: this.config.recordsPerBatchMax,
      },
    };
  }

  /**
   * A read's `maxBytes` (per partition) and `waitMs`, each checked against the node's bounds (400
   * past them); absent: readBytesMax and no wait.
   */
  readLimits(maxBytes: number | undefined, waitMs: number | undefined) {
    const { config } = this;
    return {
      maxBytes: checkInteger(maxBytes, 'max_bytes', 1, config.readBytesMax, config.readBytesMax),
      waitMs: checkInteger(waitMs, 'wait_ms', 0, config.longPollWaitMsMax, 0),
    };
  }

  /** One partition's batches from `offset`; a wait counts against longPollsMax while it lasts. */
  async read(
    log: PartitionLog,
    offset: number,
    maxBytes: number,
    waitMs: number,
    signal?: AbortSignal,
  ): Promise<PartitionReadResult> {
    const release = waitMs > 0 ? this.admitLongPoll() : () => undefined;
    try {
      return await log.read(offset, maxBytes, waitMs, signal);
    } finally {
      release();
    }
  }

  openPartitions(): PartitionLog[] {
    return this.slots.flatMap((slot) => (slot.log && !slot.log.failed ? [slot.log] : []));
  }

  /** Counts a long-poll in; 503 past longPollsMax. Returns the release. */
  admitLongPoll(): () => void {
    if (this.longPolls >= this.config.longPollsMax) {
      throw new TailbaseError(503, 'too_many_long_polls', 'too many reads are waiting for data', {
        limit: 'longPollsMax',
        max: this.config.longPollsMax,
      });
    }
    this.longPolls++;
    let released = false;
    return () => {
      if (!released) {
        released = true;
        this.longPolls--;
      }
    };
  }

  failedPartitions(): number[] {
    return this.slots.flatMap((slot, p) => (slot.error || slot.log?.failed ? [p] : []));
  }

  offsets(): { partition: number; logStartOffset: number; endOffset: number }[] {
    return this.openPartitions().map((log) => ({
      partition: log.partition,
      logStartOffset: log.logStartOffset,
      endOffset: log.endOffset,
    }));
  }

  status(): {
    nodeId: string;
    clusterId: string;
    longPolls: number;
    partitions: PartitionStatus[];
  } {
    return {
      nodeId: this.meta.nodeId,
      clusterId: this.meta.clusterId,
      longPolls: this.longPolls,
      partitions: this.meta.hostedPartitions.map((partition) => {
        const slot = this.slots[partition];
        const error = slot.error ?? slot.log?.failed ?? null;
        const log = slot.log;
        return {
          partition,
          logStartOffset: log ? log.logStartOffset : null,
          endOffset: log ? log.endOffset : null,
          sizeBytes: log ? log.sizeBytes : 0,
          segments: log ? log.segmentCount : 0,
          producers: log ? log.producerCount : 0,
          truncatedBytesOnLoad: log ? log.truncatedBytesOnLoad : 0,
          ...(error ? { error: error.message } : {}),
        };
      }),
    };
  }

  async close(): Promise<void> {
    this.closing = true;
    await Promise.all(this.slots.map((slot) => slot.log?.close()));
    this.logger.info('log-node closed');
  }
}
