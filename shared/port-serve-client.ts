/**
 * The serve contract (serve-api.ts) across threads (port-rpc.ts): the gateway on the main thread
 * reads from a serve-node on a worker thread through it. Answers are plain data (documents as
 * their JSON text), copied by the port.
 */
import type { MessagePort } from 'node:worker_threads';
import { CallBatcher } from './call-batcher.js';
import { answerPort, decodeError, encodeError, PortCaller, type EncodedError } from './port-rpc.js';
import { TailbaseError } from './errors.js';
import type {
  AppliedOffsets,
  GetResult,
  ScanOptions,
  ScanResult,
  SearchOptions,
  SearchResult,
  ServeClient,
  ServeReadOptions,
  ServeStatus,
  SnapshotResult,
  WaitFor,
} from './serve-api.js';

/** Key reads of one batch (`getMany`); the same bound as a batched read over HTTP. */
const GET_BATCH_KEYS_MAX = 128;
/** Batches out at once: while they are, concurrent reads gather into the next. */
const GET_BATCHES_IN_FLIGHT_MAX = 2;

interface BatchedGet {
  collection: string;
  key: string;
  waitFor?: WaitFor;
}

/** `pending`: the item's waitFor was not applied yet; it is asked again, alone, to wait. */
type BatchedAnswer = { ok: GetResult } | { error: EncodedError } | { pending: true };

export class PortServeClient implements ServeClient {
  private readonly caller: PortCaller;
  private readonly gets: CallBatcher<BatchedGet, BatchedAnswer>;
  /** The node's applied offsets in its latest answer: a read they cover needs no wait. */
  private lastApplied: AppliedOffsets = {};

  constructor(port: MessagePort) {
    this.caller = new PortCaller(port);
    this.gets = new CallBatcher({
      batchMax: GET_BATCH_KEYS_MAX,
      inFlightMax: GET_BATCHES_IN_FLIGHT_MAX,
      send: (items) => this.caller.call('getMany', [items]),
    });
  }

  /**
   * A read whose offsets the node's last answer showed applied (an eventual read, or a token
   * already caught up) joins the reads made at the same time in one message: a message each way
   * costs more than the read. One that may have to wait (or was answered `pending`) goes alone,
   * so it holds up no other. The same shape as HttpServeClient's batched reads.
   */
  async get(collection: string, key: string, options: ServeReadOptions = {}): Promise<GetResult> {
    const { signal, ...rest } = options;
    if (signal === undefined && this.covers(rest.waitFor ?? {})) {
      const answer = await this.gets.call({ collection, key, waitFor: rest.waitFor });
      if ('ok' in answer) return this.saw(answer.ok);
      if ('error' in answer) throw decodeError(answer.error);
    }
    return this.saw(await this.caller.call<GetResult>('get', [collection, key, rest], signal));
  }

  private covers(waitFor: WaitFor): boolean {
    return Object.entries(waitFor).every(([p, offset]) => (this.lastApplied[p] ?? 0) > offset);
  }

  private saw(result: GetResult): GetResult {
    this.lastApplied = result.applied;
    return result;
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
      // Nothing in a batch waits: an item whose offsets are not applied answers `pending`.
      getMany: ([items]) =>
        value(
          Promise.all(
            (items as BatchedGet[]).map(({ collection, key, waitFor }) =>
              serve.get(collection, key, { waitFor, waitMs: 0 }).then(
                (ok): BatchedAnswer => ({ ok }),
                (error: unknown): BatchedAnswer =>
                  error instanceof TailbaseError && error.code === 'not_caught_up'
                    ? { pending: true }
                    : { error: encodeError(error) },
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
