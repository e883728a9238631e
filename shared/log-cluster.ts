/**
 * The log layer as one object: given the log-node URLs of a cluster, learns which node stores
 * each partition and routes appends and reads there. Serve-nodes and the gateway use this rather
 * than a single HttpLogClient, so `--log URL,URL,URL` works whether one log-node holds every
 * partition or several split them.
 */
import { TailbaseError } from './errors.js';
import type { FetchOutcome } from './fetch-answer.js';
import {
  type AppendResult,
  type ClusterInfo,
  type FetchPosition,
  type LogClient,
  type LogLimits,
  type PartitionOffsets,
  type ReadOptions,
  type ReadResult,
} from './log-api.js';
import { HttpLogClient, type HttpLogClientOptions } from './http-log-client.js';

export interface LogClusterOptions extends HttpLogClientOptions {
  /** How long connect() keeps retrying log-nodes that are not up yet. */
  connectWaitMs?: number;
  connectRetryMs?: number;
}

export class LogCluster implements LogClient {
  readonly clusterId: string;
  readonly partitions: number;
  private readonly owners: LogClient[];
  private readonly nodes: LogClient[];
  /** The tightest of the log-nodes' limits: a batch may go to any of them. */
  private readonly limits: LogLimits | undefined;

  private constructor(
    clusterId: string,
    partitions: number,
    owners: LogClient[],
    nodes: LogClient[],
    limits: LogLimits | undefined,
  ) {
    this.clusterId = clusterId;
    this.partitions = partitions;
    this.owners = owners;
    this.nodes = nodes;
    this.limits = limits;
  }

  /** Asks every log-node what it stores; they must agree on the cluster and cover every partition. */
  static async connect(
    urls: readonly string[],
    options: LogClusterOptions = {},
  ): Promise<LogCluster> {
    if (urls.length === 0) throw new Error('at least one log-node URL is needed');
    const clients = urls.map((url) => new HttpLogClient(url, options));
    const infos = await Promise.all(clients.map((client) => clusterInfoWithRetry(client, options)));
    const first = infos[0];
    for (const [i, info] of infos.entries()) {
      if (info.clusterId !== first.clusterId || info.partitions !== first.partitions) {
        throw new Error(
          `log-node ${urls[i]} belongs to cluster ${info.clusterId} (${info.partitions} partitions), ` +
            `${urls[0]} to ${first.clusterId} (${first.partitions} partitions)`,
        );
      }
    }
    const owners: LogClient[] = [];
    for (let p = 0; p < first.partitions; p++) {
      const owner = infos.findIndex((info) => info.hostedPartitions.includes(p));
      if (owner < 0) throw new Error(`no log-node among ${urls.join(', ')} stores partition ${p}`);
      owners.push(clients[owner]);
    }
    return new LogCluster(first.clusterId, first.partitions, owners, clients, tightest(infos));
  }

  async cluster(): Promise<ClusterInfo> {
    const hostedPartitions = Array.from({ length: this.partitions }, (_, p) => p);
    return {
      clusterId: this.clusterId,
      partitions: this.partitions,
      hostedPartitions,
      nodeId: 'log-cluster',
      ...(this.limits ? { limits: this.limits } : {}),
    };
  }

  client(partition: number): LogClient {
    const owner = this.owners[partition];
    if (owner === undefined) {
      throw new TailbaseError(
        400,
        'invalid_partition',
        `partition ${partition} is not in 0..${this.partitions - 1}`,
      );
    }
    return owner;
  }

  append(partition: number, batch: Uint8Array, signal?: AbortSignal): Promise<AppendResult> {
    return this.client(partition).append(partition, batch, signal);
  }

  read(partition: number, offset: number, options?: ReadOptions): Promise<ReadResult> {
    return this.client(partition).read(partition, offset, options);
  }

  /** From the log-node that stores the first partition: `fetchGroups` keeps each call on one. */
  fetch(positions: readonly FetchPosition[], options?: ReadOptions): Promise<FetchOutcome[]> {
    const owner = this.client(positions[0].partition);
    if (positions.some((position) => this.client(position.partition) !== owner)) {
      throw new TailbaseError(400, 'invalid_partition', 'one fetch reads one log-node');
    }
    return owner.fetch(positions, options);
  }

  fetchGroups(partitions: readonly number[]): number[][] {
    const groups = new Map<LogClient, number[]>();
    for (const partition of partitions) {
      const owner = this.client(partition);
      groups.set(owner, [...(groups.get(owner) ?? []), partition]);
    }
    return [...groups.values()];
  }

  /** Every partition's offsets, from the nodes that store them, in partition order. */
  async offsets(): Promise<PartitionOffsets[]> {
    const answers = await Promise.all(this.nodes.map((node) => node.offsets()));
    const byPartition = new Map<number, PartitionOffsets>();
    for (const answer of answers)
      for (const offsets of answer) byPartition.set(offsets.partition, offsets);
    return [...byPartition.values()].sort((a, b) => a.partition - b.partition);
  }
}

async function clusterInfoWithRetry(
  client: HttpLogClient,
  options: LogClusterOptions,
): Promise<ClusterInfo> {
  const deadline = Date.now() + (options.connectWaitMs ?? 30_000);
  for (;;) {
    try {
      return await client.cluster();
    } catch (error) {
      if (
        !(error instanceof TailbaseError) ||
        error.code !== 'log_unreachable' ||
        Date.now() >= deadline
      )
        throw error;
      await new Promise((resolve) => setTimeout(resolve, options.connectRetryMs ?? 250));
    }
  }
}

function tightest(infos: readonly ClusterInfo[]): LogLimits | undefined {
  const all = infos.flatMap((info) => (info.limits ? [info.limits] : []));
  if (all.length === 0) return undefined;
  return {
    batchBytesMax: Math.min(...all.map((l) => l.batchBytesMax)),
    recordBytesMax: Math.min(...all.map((l) => l.recordBytesMax)),
    recordsPerBatchMax: Math.min(...all.map((l) => l.recordsPerBatchMax)),
  };
}
