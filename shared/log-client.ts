/**
 * The typed client of a log-node's internal HTTP API, used by serve-nodes, the gateway, tests and
 * benchmarks. The routes are documented in log-node/README.md.
 */
import { errorFromBody, TailbaseError } from './errors.js';

export const CLUSTER_SECRET_HEADER = 'tailbase-cluster-secret';
export const LOG_START_OFFSET_HEADER = 'tailbase-log-start-offset';
export const END_OFFSET_HEADER = 'tailbase-end-offset';

export interface AppendResult {
  baseOffset: number;
  lastOffset: number;
  /** True when the (producerId, sequence) was already appended and these are its offsets. */
  duplicate: boolean;
}

export interface PartitionOffsets {
  partition: number;
  logStartOffset: number;
  endOffset: number;
}

export interface ReadResult {
  /** Whole batches as stored; the first may start before the requested offset. */
  batches: Buffer;
  logStartOffset: number;
  endOffset: number;
}

export interface ClusterInfo {
  clusterId: string;
  partitions: number;
  /** The partitions this log-node stores. */
  hostedPartitions: number[];
  nodeId: string;
}

export interface ReadOptions {
  maxBytes?: number;
  waitMs?: number;
  signal?: AbortSignal;
}

export interface LogClient {
  cluster(): Promise<ClusterInfo>;
  append(partition: number, batch: Uint8Array, signal?: AbortSignal): Promise<AppendResult>;
  read(partition: number, offset: number, options?: ReadOptions): Promise<ReadResult>;
  offsets(): Promise<PartitionOffsets[]>;
}

export interface HttpLogClientOptions {
  clusterSecret?: string;
}

export class HttpLogClient implements LogClient {
  readonly url: string;
  private readonly headers: Record<string, string>;

  constructor(url: string, options: HttpLogClientOptions = {}) {
    this.url = url.replace(/\/+$/, '');
    this.headers = options.clusterSecret ? { [CLUSTER_SECRET_HEADER]: options.clusterSecret } : {};
  }

  async cluster(): Promise<ClusterInfo> {
    return this.json<ClusterInfo>(await this.fetch('/internal/cluster'));
  }

  async append(partition: number, batch: Uint8Array, signal?: AbortSignal): Promise<AppendResult> {
    const response = await this.fetch(`/internal/partitions/${partition}/append`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body: batch,
      signal,
    });
    return this.json<AppendResult>(response);
  }

  async read(partition: number, offset: number, options: ReadOptions = {}): Promise<ReadResult> {
    const query = new URLSearchParams({ offset: String(offset) });
    if (options.maxBytes !== undefined) query.set('max_bytes', String(options.maxBytes));
    if (options.waitMs !== undefined) query.set('wait_ms', String(options.waitMs));
    const response = await this.fetch(`/internal/partitions/${partition}/records?${query}`, {
      signal: options.signal,
    });
    if (!response.ok) throw errorFromBody(response.status, await response.json().catch(() => null));
    return {
      batches: Buffer.from(await response.arrayBuffer()),
      logStartOffset: Number(response.headers.get(LOG_START_OFFSET_HEADER)),
      endOffset: Number(response.headers.get(END_OFFSET_HEADER)),
    };
  }

  async offsets(): Promise<PartitionOffsets[]> {
    const body = await this.json<{ partitions: PartitionOffsets[] }>(
      await this.fetch('/internal/offsets'),
    );
    return body.partitions;
  }

  private async fetch(path: string, init: RequestInit = {}): Promise<Response> {
    try {
      return await fetch(this.url + path, {
        ...init,
        headers: { ...this.headers, ...(init.headers as Record<string, string> | undefined) },
      });
    } catch (cause) {
      if ((cause as Error).name === 'AbortError') throw cause;
      throw new TailbaseError(
        503,
        'log_unreachable',
        `log-node ${this.url} is unreachable`,
        {},
        {
          cause,
        },
      );
    }
  }

  private async json<T>(response: Response): Promise<T> {
    const body: unknown = await response.json().catch(() => null);
    if (!response.ok) throw errorFromBody(response.status, body);
    return body as T;
  }
}
