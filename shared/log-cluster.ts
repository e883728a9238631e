/**
 * The log layer as one object: given the log-node URLs of a cluster, learns which node stores
 * each partition number (of every topic) and routes appends and reads there. Serve-nodes and the
 * gateway use this rather than a single HttpLogClient, so `--log URL,URL,URL` works whether one
 * log-node holds every partition or several split them. Every node knows every topic: a topic is
 * created (or its configs changed) on all of them, and a collection topic this client has not
 * seen yet is ensured on all of them before its first append, so each node checks the same
 * collection ids.
 */
import { TailbaseError } from './errors.js';
import type { FetchOutcome } from './fetch-answer.js';
import {
  type AppendResult,
  type ClusterInfo,
  type FetchPosition,
  type LogClient,
  type LogLimits,
  type PartitionBytes,
  type PartitionOffsets,
  type ProducerIdentity,
  type ReadOptions,
  type ReadResult,
} from './log-api.js';
import { HttpLogClient, type HttpLogClientOptions } from './http-log-client.js';
import type { TopicConfigs, TopicInfo } from './topics.js';

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
  /** Topics ensured on every node by this client (settled or under way). */
  private readonly ensured = new Map<string, Promise<unknown>>();

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

  /** Every node's topics, merged by name (each node holds every topic). */
  async topics(): Promise<TopicInfo[]> {
    const answers = await Promise.all(this.nodes.map((node) => node.topics()));
    const byName = new Map<string, TopicInfo>();
    for (const answer of answers) {
      for (const topic of answer) if (!byName.has(topic.name)) byName.set(topic.name, topic);
    }
    return [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  /** On every node; the answer of the node that stores partition 0. */
  async ensureTopic(name: string, configs?: Partial<TopicConfigs>): Promise<TopicInfo> {
    const answers = await Promise.all(this.nodes.map((node) => node.ensureTopic(name, configs)));
    this.ensured.set(name, Promise.resolve());
    return answers[this.nodes.indexOf(this.owners[0])];
  }

  /** On every node, each dropping its partitions. */
  async deleteTopic(name: string): Promise<void> {
    this.ensured.delete(name);
    await Promise.all(this.nodes.map((node) => node.deleteTopic(name)));
  }

  /** From the node that stores partition 0, the one that hands producer ids out. */
  initProducerId(): Promise<ProducerIdentity> {
    return this.client(0).initProducerId();
  }

  async append(
    topic: string,
    partition: number,
    batch: Uint8Array,
    signal?: AbortSignal,
  ): Promise<AppendResult> {
    const owner = this.client(partition);
    if (this.nodes.length > 1) await this.ensureOnEveryNode(topic);
    return owner.append(topic, partition, batch, signal);
  }

  /** Once per topic and client; a failure is forgotten so the next append tries again. */
  private ensureOnEveryNode(topic: string): Promise<unknown> {
    let ensured = this.ensured.get(topic);
    if (ensured === undefined) {
      ensured = this.ensureTopic(topic).catch((error: unknown) => {
        this.ensured.delete(topic);
        throw error;
      });
      this.ensured.set(topic, ensured);
    }
    return ensured;
  }

  read(
    topic: string,
    partition: number,
    offset: number,
    options?: ReadOptions,
  ): Promise<ReadResult> {
    return this.client(partition).read(topic, partition, offset, options);
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

  /** Every topic-partition's offsets, from the nodes that store them, by topic and partition. */
  async offsets(): Promise<PartitionOffsets[]> {
    const answers = await Promise.all(this.nodes.map((node) => node.offsets()));
    return answers
      .flat()
      .sort((a, b) =>
        a.topic === b.topic ? a.partition - b.partition : a.topic < b.topic ? -1 : 1,
      );
  }

  async diskBytes(): Promise<PartitionBytes[]> {
    return (await Promise.all(this.nodes.map((node) => node.diskBytes()))).flat();
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
