/**
 * The log contract (shared/log-api.ts) bound in-process to a LogNode, for `tailbase start`: an
 * append goes straight into its partition's group commit and a fetch long-polls on the
 * partitions' own waiters, woken when an append is durable. The same checks and bounds as the
 * HTTP routes (routes.ts), with no encoding, socket or copy in between.
 */
import type { FetchOutcome } from '../shared/fetch-answer.js';
import type {
  AppendResult,
  ClusterInfo,
  FetchPosition,
  LogClient,
  PartitionOffsets,
  ReadOptions,
  ReadResult,
} from '../shared/log-api.js';
import { oneNodeFetchGroups } from '../shared/log-api.js';
import { checkPartitionOffsets } from '../shared/query-params.js';
import { fetchPartitions } from './fetch.js';
import type { LogNode } from './log-node.js';

export class LocalLogClient implements LogClient {
  constructor(private readonly node: LogNode) {}

  async cluster(): Promise<ClusterInfo> {
    return this.node.clusterInfo();
  }

  /**
   * Resolves once the batch is durable. An abort (the caller's deadline) answers at once, as a
   * lost HTTP answer would: the append itself may still complete, which the caller's idempotent
   * retry under the same sequence then finds.
   */
  append(partition: number, batch: Uint8Array, signal?: AbortSignal): Promise<AppendResult> {
    const bytes = Buffer.isBuffer(batch)
      ? batch
      : Buffer.from(batch.buffer, batch.byteOffset, batch.length);
    const appended = this.node.partition(String(partition)).append(bytes);
    if (signal === undefined) return appended;
    signal.throwIfAborted();
    return new Promise((resolve, reject) => {
      const aborted = () => reject(signal.reason);
      signal.addEventListener('abort', aborted, { once: true });
      appended.then(resolve, reject).finally(() => signal.removeEventListener('abort', aborted));
    });
  }

  async read(partition: number, offset: number, options: ReadOptions = {}): Promise<ReadResult> {
    const { maxBytes, waitMs } = this.node.readLimits(options.maxBytes, options.waitMs);
    const log = this.node.partition(String(partition));
    return this.node.read(log, offset, maxBytes, waitMs, options.signal);
  }

  async fetch(
    positions: readonly FetchPosition[],
    options: ReadOptions = {},
  ): Promise<FetchOutcome[]> {
    const { maxBytes, waitMs } = this.node.readLimits(options.maxBytes, options.waitMs);
    checkPartitionOffsets(positions, 'from', this.node.config.partitionsMax);
    return fetchPartitions(this.node, positions, maxBytes, waitMs, options.signal);
  }

  /** One node stores every partition it is asked for. */
  fetchGroups(partitions: readonly number[]): number[][] {
    return oneNodeFetchGroups(partitions);
  }

  async offsets(): Promise<PartitionOffsets[]> {
    return this.node.offsets();
  }
}
