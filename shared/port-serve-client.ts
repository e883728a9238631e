/**
 * The serve contract (serve-api.ts) across threads (port-rpc.ts): the gateway on the main thread
 * reads from the serve-node on its own thread through it. Answers are plain data (documents as
 * their JSON text), copied by the port.
 */
import type { MessagePort } from 'node:worker_threads';
import { BatchedGets } from './batched-gets.js';
import { answered, answerPort, PortCaller } from './port-rpc.js';
import type {
  BatchedGet,
  BatchedGetter,
  CollectionStoreBytes,
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

export class PortServeClient implements ServeClient {
  private readonly caller: PortCaller;
  private readonly gets: BatchedGets;

  constructor(port: MessagePort) {
    this.caller = new PortCaller(port);
    this.gets = new BatchedGets({
      batchMax: GET_BATCH_KEYS_MAX,
      inFlightMax: GET_BATCHES_IN_FLIGHT_MAX,
      sendBatch: (items) => this.caller.call('getMany', [items]),
      sendOne: (collection, key, { signal, ...rest }) =>
        this.caller.call('get', [collection, key, rest], signal),
    });
  }

  /** Batched with the reads made at the same time when it need not wait (batched-gets.ts). */
  get(collection: string, key: string, options: ServeReadOptions = {}): Promise<GetResult> {
    return this.gets.get(collection, key, options);
  }

  scan(collection: string, options: ScanOptions = {}): Promise<ScanResult> {
    const { signal, ...rest } = options;
    return this.caller.call('scan', [collection, rest], signal);
  }

  search(collection: string, options: SearchOptions): Promise<SearchResult> {
    const { signal, ...rest } = options;
    return this.caller.call('search', [collection, rest], signal);
  }

  countDocuments(collection: string, partitions?: readonly number[]): Promise<number> {
    return this.caller.call('countDocuments', [collection, partitions]);
  }

  storeBytes(): Promise<CollectionStoreBytes[]> {
    return this.caller.call('storeBytes', []);
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

  dropCollection(collection: string, signal?: AbortSignal): Promise<void> {
    return this.caller.call('dropCollection', [collection], signal);
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
  serve: ServeClient & BatchedGetter,
  onBug: (error: unknown) => void,
): void {
  answerPort(
    port,
    {
      get: ([collection, key, options], signal) =>
        answered(
          serve.get(collection as string, key as string, {
            ...(options as ServeReadOptions),
            signal,
          }),
        ),
      getMany: async ([items]) => ({ value: serve.getMany(items as BatchedGet[]) }),
      scan: ([collection, options], signal) =>
        answered(serve.scan(collection as string, { ...(options as ScanOptions), signal })),
      search: ([collection, options], signal) =>
        answered(serve.search(collection as string, { ...(options as SearchOptions), signal })),
      countDocuments: ([collection, partitions]) =>
        answered(
          serve.countDocuments(collection as string, partitions as readonly number[] | undefined),
        ),
      storeBytes: () => answered(serve.storeBytes()),
      status: () => answered(serve.status()),
      ready: () => answered(serve.ready()),
      rebuild: () => answered(serve.rebuild()),
      dropCollection: ([collection]) => answered(serve.dropCollection(collection as string)),
      snapshot: ([dir]) => answered(serve.snapshot(dir as string)),
    },
    onBug,
  );
}
