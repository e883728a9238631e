/**
 * The typed client of a log-node's internal HTTP API, used by serve-nodes, the gateway, tests and
 * benchmarks. The routes are documented in log-node/README.md.
 */
import { errorFromBody } from './errors.js';
import { InternalHttp, type InternalResponse } from './internal-http.js';

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
  private readonly http: InternalHttp;

  constructor(url: string, options: HttpLogClientOptions = {}) {
    const headers: Record<string, string> = options.clusterSecret
      ? { [CLUSTER_SECRET_HEADER]: options.clusterSecret }
      : {};
    this.http = new InternalHttp(url, 'log-node', headers);
    this.url = this.http.url;
  }

  async cluster(): Promise<ClusterInfo> {
    return json<ClusterInfo>(await this.http.request('/internal/cluster'));
  }

  async append(partition: number, batch: Uint8Array, signal?: AbortSignal): Promise<AppendResult> {
    const response = await this.http.request(`/internal/partitions/${partition}/append`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body: batch,
      signal,
    });
    return json<AppendResult>(response);
  }

  async read(partition: number, offset: number, options: ReadOptions = {}): Promise<ReadResult> {
    const query = new URLSearchParams({ offset: String(offset) });
    if (options.maxBytes !== undefined) query.set('max_bytes', String(options.maxBytes));
    if (options.waitMs !== undefined) query.set('wait_ms', String(options.waitMs));
    const response = await this.http.request(`/internal/partitions/${partition}/records?${query}`, {
      signal: options.signal,
    });
    if (!response.ok) throw errorFromBody(response.status, response.json());
    return {
      batches: response.body,
      logStartOffset: Number(response.header(LOG_START_OFFSET_HEADER)),
      endOffset: Number(response.header(END_OFFSET_HEADER)),
    };
  }

  async offsets(): Promise<PartitionOffsets[]> {
    const body = json<{ partitions: PartitionOffsets[] }>(
      await this.http.request('/internal/offsets'),
    );
    return body.partitions;
  }

  close(): void {
    this.http.close();
  }
}

function json<T>(response: InternalResponse): T {
  const body = response.json();
  if (!response.ok) throw errorFromBody(response.status, body);
  return body as T;
}
