/**
 * The log as one client over several log-nodes that split the partitions between them (each
 * reports its `hostedPartitions` in /internal/cluster): appends and reads go to the node holding
 * the partition, offsets are gathered from all. Every node must name the same cluster.
 */
import { assert } from '../shared/assert.js';
import type {
  AppendResult,
  ClusterInfo,
  LogClient,
  PartitionOffsets,
  ReadOptions,
  ReadResult,
} from '../shared/log-client.js';

type NodeInfo = ClusterInfo & { hostedPartitions?: number[] | null };

export class PartitionedLogClient implements LogClient {
  private constructor(
    private readonly info: ClusterInfo,
    private readonly owners: LogClient[],
    private readonly nodes: LogClient[],
  ) {}

  /** Asks every node what it hosts; a single node hosts every partition. */
  static async connect(nodes: LogClient[]): Promise<LogClient> {
    if (nodes.length === 1) return nodes[0];
    const infos = (await Promise.all(nodes.map((n) => n.cluster()))) as NodeInfo[];
    const [first] = infos;
    const owners: LogClient[] = new Array(first.partitions);
    infos.forEach((info, i) => {
      if (info.clusterId !== first.clusterId || info.partitions !== first.partitions) {
        throw new Error('the log-nodes given belong to different clusters');
      }
      const hosted = info.hostedPartitions ?? Array.from({ length: info.partitions }, (_, p) => p);
      for (const p of hosted) owners[p] ??= nodes[i];
    });
    for (let p = 0; p < first.partitions; p++) {
      assert(owners[p] !== undefined, `no log-node given hosts partition ${p}`);
    }
    return new PartitionedLogClient(first, owners, nodes);
  }

  async cluster(): Promise<ClusterInfo> {
    return this.info;
  }

  append(partition: number, batch: Uint8Array, signal?: AbortSignal): Promise<AppendResult> {
    return this.owners[partition].append(partition, batch, signal);
  }

  read(partition: number, offset: number, options?: ReadOptions): Promise<ReadResult> {
    return this.owners[partition].read(partition, offset, options);
  }

  async offsets(): Promise<PartitionOffsets[]> {
    const all = await Promise.all(this.nodes.map((n) => n.offsets()));
    return all
      .flatMap((list, i) => list.filter((o) => this.owners[o.partition] === this.nodes[i]))
      .sort((a, b) => a.partition - b.partition);
  }
}
