/**
 * The log contract (log-api.ts) across threads (port-rpc.ts): the gateway appends to, and the
 * serve-node tails, the log-node on its own thread through it. Batches cross as transferred buffers of
 * their own; a partition's error in a fetch crosses as the same TailbaseError.
 */
import type { MessagePort, Transferable } from 'node:worker_threads';
import type { FetchOutcome } from './fetch-answer.js';
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
} from './log-api.js';
import type { TopicConfigs, TopicInfo } from './topics.js';
import { oneNodeFetchGroups } from './log-api.js';
import {
  answered,
  answerPort,
  asBuffer,
  decodeError,
  encodeError,
  ownBytes,
  PortCaller,
  type EncodedError,
} from './port-rpc.js';

/** ReadOptions without the signal, which cannot cross a port (it becomes a cancel). */
type PortReadOptions = Omit<ReadOptions, 'signal'>;

type PortFetchOutcome =
  | {
      topic: string;
      partition: number;
      logStartOffset: number;
      endOffset: number;
      batches: Uint8Array;
    }
  | { topic: string; partition: number; error: EncodedError };

export class PortLogClient implements LogClient {
  private readonly caller: PortCaller;

  constructor(port: MessagePort) {
    this.caller = new PortCaller(port);
  }

  cluster(): Promise<ClusterInfo> {
    return this.caller.call('cluster', []);
  }

  topics(): Promise<TopicInfo[]> {
    return this.caller.call('topics', []);
  }

  ensureTopic(name: string, configs?: Partial<TopicConfigs>): Promise<TopicInfo> {
    return this.caller.call('ensureTopic', [name, configs]);
  }

  setTopicConfigs(name: string, configs: Partial<TopicConfigs>): Promise<TopicInfo> {
    return this.caller.call('setTopicConfigs', [name, configs]);
  }

  deleteTopic(name: string): Promise<void> {
    return this.caller.call('deleteTopic', [name]);
  }

  initProducerId(): Promise<ProducerIdentity> {
    return this.caller.call('initProducerId', []);
  }

  /** The batch crosses as a transferred copy: it may be a view into Node's shared pool. */
  append(
    topic: string,
    partition: number,
    batch: Uint8Array,
    signal?: AbortSignal,
  ): Promise<AppendResult> {
    const { bytes, transfer } = ownBytes(batch);
    return this.caller.call('append', [topic, partition, bytes], signal, [transfer]);
  }

  async read(
    topic: string,
    partition: number,
    offset: number,
    options: ReadOptions = {},
  ): Promise<ReadResult> {
    const { signal, ...rest } = options;
    const result = await this.caller.call<ReadResult>(
      'read',
      [topic, partition, offset, rest],
      signal,
    );
    return { ...result, batches: asBuffer(result.batches) };
  }

  async fetch(
    positions: readonly FetchPosition[],
    options: ReadOptions = {},
  ): Promise<FetchOutcome[]> {
    const { signal, ...rest } = options;
    const outcomes = await this.caller.call<PortFetchOutcome[]>('fetch', [positions, rest], signal);
    return outcomes.map((outcome) =>
      'error' in outcome
        ? { topic: outcome.topic, partition: outcome.partition, error: decodeError(outcome.error) }
        : { ...outcome, batches: asBuffer(outcome.batches) },
    );
  }

  /** The other side is one log-node (or one cluster client that groups for itself). */
  fetchGroups(partitions: readonly number[]): number[][] {
    return oneNodeFetchGroups(partitions);
  }

  offsets(): Promise<PartitionOffsets[]> {
    return this.caller.call('offsets', []);
  }

  diskBytes(): Promise<PartitionBytes[]> {
    return this.caller.call('diskBytes', []);
  }

  /** Calls still out fail (the serving thread is stopping). */
  close(error: Error): void {
    this.caller.failAll(error);
  }
}

/** Serves `log` to the PortLogClient at the other end of `port`. */
export function answerLogPort(
  port: MessagePort,
  log: LogClient,
  onBug: (error: unknown) => void,
): void {
  answerPort(
    port,
    {
      cluster: () => answered(log.cluster()),
      topics: () => answered(log.topics()),
      ensureTopic: ([name, configs]) =>
        answered(log.ensureTopic(name as string, configs as Partial<TopicConfigs> | undefined)),
      setTopicConfigs: ([name, configs]) =>
        answered(log.setTopicConfigs(name as string, configs as Partial<TopicConfigs>)),
      deleteTopic: ([name]) => answered(log.deleteTopic(name as string)),
      initProducerId: () => answered(log.initProducerId()),
      append: ([topic, partition, batch], signal) =>
        answered(
          log.append(topic as string, partition as number, asBuffer(batch as Uint8Array), signal),
        ),
      read: async ([topic, partition, offset, options], signal) => {
        const read = await log.read(topic as string, partition as number, offset as number, {
          ...(options as PortReadOptions),
          signal,
        });
        const { bytes, transfer } = ownBytes(read.batches);
        return { value: { ...read, batches: bytes }, transfer: [transfer] };
      },
      fetch: async ([positions, options], signal) => {
        const outcomes = await log.fetch(positions as FetchPosition[], {
          ...(options as PortReadOptions),
          signal,
        });
        const transfer: Transferable[] = [];
        const value = outcomes.map((outcome): PortFetchOutcome => {
          if ('error' in outcome) {
            return {
              topic: outcome.topic,
              partition: outcome.partition,
              error: encodeError(outcome.error),
            };
          }
          const { bytes, transfer: buffer } = ownBytes(outcome.batches);
          transfer.push(buffer);
          return { ...outcome, batches: bytes };
        });
        return { value, transfer };
      },
      offsets: () => answered(log.offsets()),
      diskBytes: () => answered(log.diskBytes()),
    },
    onBug,
  );
}
