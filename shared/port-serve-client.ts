/**
 * The serve contract (serve-api.ts) across threads (port-rpc.ts): the gateway on the main thread
 * reads from a serve-node on a worker thread through it. Answers are plain data (documents as
 * their JSON text), copied by the port.
 */
import type { MessagePort } from 'node:worker_threads';
import { answerPort, PortCaller } from './port-rpc.js';
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

export class PortServeClient implements ServeClient {
  private readonly caller: PortCaller;

  constructor(port: MessagePort) {
    this.caller = new PortCaller(port);
  }

  get(collection: string, key: string, options: ServeReadOptions = {}): Promise<GetResult> {
    const { signal, ...rest } = options;
    return this.caller.call('get', [collection, key, rest], signal);
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
