/**
 * The log contract (log-api.ts) over a log-node's internal HTTP API, used by serve-nodes, the
 * gateway, tests and benchmarks in a multi-process cluster. The routes are documented in
 * log-node/README.md.
 */
import { CallBatcher } from './call-batcher.js';
import { errorFromBody, TailbaseError } from './errors.js';
import { decodeFetchAnswer, type FetchOutcome } from './fetch-answer.js';
import { InternalHttp, type InternalResponse } from './internal-http.js';
import {
  APPEND_REQUEST_BYTES_MAX,
  CLUSTER_SECRET_HEADER,
  END_OFFSET_HEADER,
  LOG_ANSWER_MS_MAX,
  LOG_START_OFFSET_HEADER,
  PARTITIONS_MAX,
  type AppendResult,
  type ClusterInfo,
  type FetchPosition,
  type LogClient,
  type PartitionAppendOutcome,
  type PartitionBytes,
  type PartitionOffsets,
  type ProducerIdentity,
  type ReadOptions,
  type ReadResult,
  oneNodeFetchGroups,
} from './log-api.js';
import { encodeFrames, FRAME_HEADER_BYTES, type PartitionFrame } from './partition-frames.js';
import type { TopicConfigs, TopicInfo } from './topics.js';

export interface HttpLogClientOptions {
  clusterSecret?: string;
  /** Body bytes of one multi-partition append (at most the log-node's `appendRequestBytesMax`). */
  appendRequestBytesMax?: number;
  /**
   * How long the log-node may take to answer a read, fetch or offsets call beyond the wait it was
   * asked for; past it the call fails as `log_unreachable` (a hung node is as good as down).
   * Appends are bounded by their callers' signals.
   */
  answerMsMax?: number;
}

/** Multi-partition appends out to one log-node at once. */
const APPENDS_IN_FLIGHT_MAX = 4;

interface QueuedAppend {
  frame: PartitionFrame;
  signal?: AbortSignal;
}

export class HttpLogClient implements LogClient {
  readonly url: string;
  private readonly http: InternalHttp;
  /** Each batch's own outcome: its offsets, or the error of its frame or of its call. */
  private readonly appends: CallBatcher<QueuedAppend, AppendResult | Error>;
  private appendRouteMissing = false;
  private readonly answerMsMax: number;

  constructor(url: string, options: HttpLogClientOptions = {}) {
    const headers: Record<string, string> = options.clusterSecret
      ? { [CLUSTER_SECRET_HEADER]: options.clusterSecret }
      : {};
    this.http = new InternalHttp(url, 'log-node', headers);
    this.url = this.http.url;
    this.answerMsMax = options.answerMsMax ?? LOG_ANSWER_MS_MAX;
    this.appends = new CallBatcher({
      batchMax: PARTITIONS_MAX,
      inFlightMax: APPENDS_IN_FLIGHT_MAX,
      batchWeightMax: options.appendRequestBytesMax ?? APPEND_REQUEST_BYTES_MAX,
      weigh: (queued) => FRAME_HEADER_BYTES + queued.frame.topic.length + queued.frame.bytes.length,
      send: (queued) => this.appendMany(queued),
    });
  }

  async cluster(): Promise<ClusterInfo> {
    return json<ClusterInfo>(
      await this.http.request('/internal/cluster', { timeoutMs: this.answerMsMax }),
    );
  }

  async topics(): Promise<TopicInfo[]> {
    const body = json<{ topics: TopicInfo[] }>(
      await this.http.request('/internal/topics', { timeoutMs: this.answerMsMax }),
    );
    return body.topics;
  }

  async ensureTopic(name: string, configs: Partial<TopicConfigs> = {}): Promise<TopicInfo> {
    return json<TopicInfo>(
      await this.http.request(`/internal/topics/${encodeURIComponent(name)}`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: Buffer.from(JSON.stringify(configs)),
        timeoutMs: this.answerMsMax,
      }),
    );
  }

  async deleteTopic(name: string): Promise<void> {
    const answer = await this.http.request(`/internal/topics/${encodeURIComponent(name)}`, {
      method: 'DELETE',
      timeoutMs: this.answerMsMax,
    });
    json<unknown>(answer);
  }

  async initProducerId(): Promise<ProducerIdentity> {
    return json<ProducerIdentity>(
      await this.http.request('/internal/producer-ids', {
        method: 'POST',
        timeoutMs: this.answerMsMax,
      }),
    );
  }

  /**
   * Appends made in the same event-loop turn (a gateway's partition writers) travel to the
   * log-node as one multi-partition append; each still gets its own offsets or error. A call that
   * fails as a whole fails every batch in it alike: refused connecting (`connectionRefused`), none
   * of them reached the log-node.
   */
  async append(
    topic: string,
    partition: number,
    batch: Uint8Array,
    signal?: AbortSignal,
  ): Promise<AppendResult> {
    const bytes = Buffer.isBuffer(batch)
      ? batch
      : Buffer.from(batch.buffer, batch.byteOffset, batch.length);
    const outcome = await this.appends.call({ frame: { topic, partition, bytes }, signal });
    if (outcome instanceof Error) throw outcome;
    return outcome;
  }

  private async appendMany(queued: QueuedAppend[]): Promise<(AppendResult | Error)[]> {
    if (this.appendRouteMissing) return this.appendEach(queued);
    const signals = queued.flatMap((item) => (item.signal === undefined ? [] : [item.signal]));
    const response = await this.http.request('/internal/append', {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body: encodeFrames(queued.map((item) => item.frame)),
      signal: signals.length === 0 ? undefined : AbortSignal.any(signals),
    });
    if (!response.ok) {
      const refusal = errorFromBody(response.status, response.json());
      if (refusal.code !== 'not_found' && refusal.code !== 'request_too_large') throw refusal;
      // A log-node without the route (an older version: remembered) or with a smaller
      // appendRequestBytesMax: each batch goes alone, as the route it has always had takes it.
      this.appendRouteMissing ||= refusal.code === 'not_found';
      return this.appendEach(queued);
    }
    const { partitions } = response.json() as { partitions: PartitionAppendOutcome[] };
    if (!Array.isArray(partitions) || partitions.length !== queued.length) {
      throw new TailbaseError(502, 'peer_error', 'the log-node answered another number of appends');
    }
    return partitions.map((outcome) => {
      if ('error' in outcome) return errorFromBody(outcome.status, outcome);
      return {
        baseOffset: outcome.baseOffset,
        lastOffset: outcome.lastOffset,
        duplicate: outcome.duplicate,
      };
    });
  }

  /**
   * Each batch in its own call, each answered with its own outcome: one call failing (its
   * connection refused) says nothing of another, which the log-node may have appended.
   */
  private appendEach(queued: QueuedAppend[]): Promise<(AppendResult | Error)[]> {
    return Promise.all(
      queued.map((item) =>
        this.appendOne(item).catch((error: unknown) =>
          error instanceof Error ? error : new Error(String(error)),
        ),
      ),
    );
  }

  private async appendOne({ frame, signal }: QueuedAppend): Promise<AppendResult | TailbaseError> {
    const route = `/internal/topics/${encodeURIComponent(frame.topic)}/partitions/${frame.partition}/append`;
    const response = await this.http.request(route, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body: frame.bytes,
      signal,
    });
    const body = response.json();
    return response.ok ? (body as AppendResult) : errorFromBody(response.status, body);
  }

  async read(
    topic: string,
    partition: number,
    offset: number,
    options: ReadOptions = {},
  ): Promise<ReadResult> {
    const query = new URLSearchParams({ offset: String(offset) });
    if (options.maxBytes !== undefined) query.set('max_bytes', String(options.maxBytes));
    if (options.waitMs !== undefined) query.set('wait_ms', String(options.waitMs));
    const route = `/internal/topics/${encodeURIComponent(topic)}/partitions/${partition}/records`;
    const response = await this.http.request(`${route}?${query}`, {
      signal: options.signal,
      timeoutMs: this.answerMsMax + (options.waitMs ?? 0),
    });
    if (!response.ok) throw errorFromBody(response.status, response.json());
    return {
      batches: response.body,
      logStartOffset: Number(response.header(LOG_START_OFFSET_HEADER)),
      endOffset: Number(response.header(END_OFFSET_HEADER)),
    };
  }

  async fetch(
    positions: readonly FetchPosition[],
    options: ReadOptions = {},
  ): Promise<FetchOutcome[]> {
    // Topic names never hold ':' or ',' (shared/topics.ts).
    const from = positions
      .map(({ topic, partition, offset }) => `${topic}:${partition}:${offset}`)
      .join(',');
    const query = new URLSearchParams({ from });
    if (options.maxBytes !== undefined) query.set('max_bytes', String(options.maxBytes));
    if (options.waitMs !== undefined) query.set('wait_ms', String(options.waitMs));
    const response = await this.http.request(`/internal/fetch?${query}`, {
      signal: options.signal,
      timeoutMs: this.answerMsMax + (options.waitMs ?? 0),
    });
    if (!response.ok) throw errorFromBody(response.status, response.json());
    return decodeFetchAnswer(response.body);
  }

  fetchGroups(partitions: readonly number[]): number[][] {
    return oneNodeFetchGroups(partitions);
  }

  async offsets(): Promise<PartitionOffsets[]> {
    const body = json<{ partitions: PartitionOffsets[] }>(
      await this.http.request('/internal/offsets', { timeoutMs: this.answerMsMax }),
    );
    return body.partitions;
  }

  /** From the node's status: each partition's segment bytes, null where the partition failed. */
  async diskBytes(): Promise<PartitionBytes[]> {
    const body = json<{
      partitions: Array<{ topic: string; partition: number; sizeBytes: number; error?: string }>;
    }>(await this.http.request('/internal/status', { timeoutMs: this.answerMsMax }));
    return body.partitions.map(({ topic, partition, sizeBytes, error }) => ({
      topic,
      partition,
      bytes: error === undefined ? sizeBytes : null,
    }));
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
