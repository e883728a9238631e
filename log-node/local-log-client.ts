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
  PartitionBytes,
  PartitionOffsets,
  ProducerIdentity,
  ReadOptions,
  ReadResult,
} from '../shared/log-api.js';
import { oneNodeFetchGroups } from '../shared/log-api.js';
import type { TopicConfigs, TopicInfo } from '../shared/topics.js';
import { fetchPartitions } from './fetch.js';
import { checkFetchPositions } from './fetch-positions.js';
import type { LogNode } from './log-node.js';

export interface LocalLogClientOptions {
  /**
   * Whether an append to a missing collection topic creates it (the gateway's first write of a
   * collection); false for the view processors, whose topic goes only when its version does.
   */
  appendCreatesTopics?: boolean;
}

export class LocalLogClient implements LogClient {
  private readonly appendCreatesTopics: boolean;

  constructor(
    private readonly node: LogNode,
    options: LocalLogClientOptions = {},
  ) {
    this.appendCreatesTopics = options.appendCreatesTopics ?? true;
  }

  async cluster(): Promise<ClusterInfo> {
    return this.node.clusterInfo();
  }

  async topics(): Promise<TopicInfo[]> {
    return this.node.topics();
  }

  async ensureTopic(name: string, configs?: Partial<TopicConfigs>): Promise<TopicInfo> {
    return this.node.ensureTopic(name, configs);
  }

  async setTopicConfigs(name: string, configs: Partial<TopicConfigs>): Promise<TopicInfo> {
    return this.node.setTopicConfigs(name, configs);
  }

  deleteTopic(name: string): Promise<void> {
    return this.node.deleteTopic(name);
  }

  async initProducerId(): Promise<ProducerIdentity> {
    return this.node.initProducerId();
  }

  /**
   * Resolves once the batch is durable. An abort (the caller's deadline) answers at once, as a
   * lost HTTP answer would: the append itself may still complete, which the caller's idempotent
   * retry under the same sequence then finds.
   */
  append(
    topic: string,
    partition: number,
    batch: Uint8Array,
    signal?: AbortSignal,
  ): Promise<AppendResult> {
    const bytes = Buffer.isBuffer(batch)
      ? batch
      : Buffer.from(batch.buffer, batch.byteOffset, batch.length);
    let appended: Promise<AppendResult>;
    try {
      const target = this.appendCreatesTopics
        ? this.node.appendTarget(topic, String(partition), bytes)
        : this.node.partition(topic, String(partition));
      appended = target.append(bytes);
    } catch (error) {
      return Promise.reject(error);
    }
    if (signal === undefined) return appended;
    signal.throwIfAborted();
    return new Promise((resolve, reject) => {
      const aborted = () => reject(signal.reason);
      signal.addEventListener('abort', aborted, { once: true });
      appended.then(resolve, reject).finally(() => signal.removeEventListener('abort', aborted));
    });
  }

  async read(
    topic: string,
    partition: number,
    offset: number,
    options: ReadOptions = {},
  ): Promise<ReadResult> {
    const { maxBytes, waitMs } = this.node.readLimits(options.maxBytes, options.waitMs);
    const log = this.node.partition(topic, String(partition));
    return this.node.read(log, offset, maxBytes, waitMs, options.signal);
  }

  async fetch(
    positions: readonly FetchPosition[],
    options: ReadOptions = {},
  ): Promise<FetchOutcome[]> {
    const { maxBytes, waitMs } = this.node.readLimits(options.maxBytes, options.waitMs);
    checkFetchPositions(positions, this.node.config.partitionsMax);
    return fetchPartitions(this.node, positions, maxBytes, waitMs, options.signal);
  }

  giveBack(batches: Buffer): void {
    this.node.readBuffers.giveBack(batches);
  }

  /** One node stores every partition it is asked for. */
  fetchGroups(partitions: readonly number[]): number[][] {
    return oneNodeFetchGroups(partitions);
  }

  async offsets(): Promise<PartitionOffsets[]> {
    return this.node.offsets();
  }

  async diskBytes(): Promise<PartitionBytes[]> {
    return this.node.diskBytes();
  }
}
