/**
 * The serve contract (serve-api.ts) across threads (port-rpc.ts): the gateway on the main thread
 * reads from a serve-node on a worker thread through it. Answers are plain data (documents as
 * their JSON text), copied by the port.
 */
import type { MessagePort } from 'node:worker_threads';
import { CallBatcher } from './call-batcher.js';
import { answerPort, decodeError, encodeError, PortCaller, type EncodedError } from './port-rpc.js';
import type {
  GetResult,
  ScanOptions,
  ScanResult,
  SearchOptions,
  SearchResult,
  ServeClient,
  ServeReadOptions,
  ServeStatus,
  SnapshotResult,
} from './serve-api.js';

/** Key reads of one batch (`getMany`); the same bound as a batched read over HTTP. */
const GET_BATCH_KEYS_MAX = 128;
/** Batches out at once: while they are, concurrent reads gather into the next. */
const GET_BATCHES_IN_FLIGHT_MAX = 2;

interface BatchedGet {
  collection: string;
  key: string;
}

type BatchedAnswer = { ok: GetResult } | { error: EncodedError };

export class PortServeClient implements ServeClient {
  private readonly caller: PortCaller;
  private readonly gets: CallBatcher<BatchedGet, BatchedAnswer>;

  constructor(port: MessagePort) {
    this.caller = new PortCaller(port);
    this.gets = new CallBatcher({
      batchMax: GET_BATCH_KEYS_MAX,
      inFlightMax: GET_BATCHES_IN_FLIGHT_MAX,
      send: (items) => this.caller.call('getMany', [items]),
    });
  }

  /**
   * A read with nothing to wait for joins the reads made at the same time in one message (a
   * message each way costs more than the read); one that waits for offsets goes alone, so it
   * holds up no other.
   */
  async get(collection: string, key: string, options: ServeReadOptions = {}): Promise<GetResult> {
    const { signal, ...rest } = options;
    const waits = rest.waitFor !== undefined && Object.keys(rest.waitFor).length > 0;
    if (signal !== undefined || waits)
      return this.caller.call('get', [collection, key, rest], signal);
    const answer = await this.gets.call({ collection, key });
    if ('error' in answer) throw decodeError(answer.error);
    return answer.ok;
  }

  scan(collection: string, options: ScanOptions = {}): Promise<ScanResult> {
    const { signal, ...rest } = options;
    return this.caller.call('scan', [collection, rest], signal);
  }

  search(collection: string, options: SearchOptions): Promise<SearchResult> {
    const { signal, ...rest } = options;
    return this.caller.call('search', [collection, rest], signal);
  }

  status(): Promise<ServeStatus> {
    return this.caller.call('status', []);
  }

  ready(): Promise<boolean> {
    return this.caller.call('ready', []);
  }

  rebuild(): Promise<void> {
    return this.caller.call('rebuild', []);
  }

  snapshot(dir: string): Promise<SnapshotResult> {
    return this.caller.call('snapshot', [dir]);
  }

  /** Calls still out fail (the serving thread is gone). */
  close(error: Error): void {
    this.caller.failAll(error);
  }
}

/** Serves `serve` to the PortServeClient at the other end of `port`. */
export function answerServePort(
  port: MessagePort,
  serve: ServeClient,
  onBug: (error: unknown) => void,
): void {
  const value = async <T>(result: Promise<T>) => ({ value: await result });
  answerPort(
    port,
    {
      get: ([collection, key, options], signal) =>
        value(
          serve.get(collection as string, key as string, {
            ...(options as ServeReadOptions),
            signal,
          }),
        ),
      getMany: ([items]) =>
        value(
          Promise.all(
            (items as BatchedGet[]).map(({ collection, key }) =>
              serve.get(collection, key).then(
                (ok): BatchedAnswer => ({ ok }),
                (error: unknown): BatchedAnswer => ({ error: encodeError(error) }),
              ),
            ),
          ),
        ),
      scan: ([collection, options], signal) =>
        value(serve.scan(collection as string, { ...(options as ScanOptions), signal })),
      search: ([collection, options], signal) =>
        value(serve.search(collection as string, { ...(options as SearchOptions), signal })),
      status: () => value(serve.status()),
      ready: () => value(serve.ready()),
      rebuild: () => value(serve.rebuild()),
      snapshot: ([dir]) => value(serve.snapshot(dir as string)),
    },
    onBug,
  );
}
