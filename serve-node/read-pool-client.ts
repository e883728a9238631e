/**
 * The serve contract over a serve-node's threads: key reads to `keyReader` when there is one (a
 * reader on the caller's own thread: no hop), other reads (and key reads without it) to the read
 * thread with the fewest calls out, everything else to the apply thread.
 */
import type {
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
} from '../shared/serve-api.js';

export class ReadPoolClient implements ServeClient {
  /** Calls out to each reader, by its index. */
  private readonly out: number[];

  constructor(
    private readonly readers: readonly ServeClient[],
    private readonly applier: ServeClient,
    private readonly keyReader: ServeClient | null = null,
  ) {
    if (readers.length === 0) throw new Error('a read pool needs at least one reader');
    this.out = readers.map(() => 0);
  }

  get(collection: string, key: string, options?: ServeReadOptions): Promise<GetResult> {
    if (this.keyReader !== null) return this.keyReader.get(collection, key, options);
    return this.read((reader) => reader.get(collection, key, options));
  }

  scan(collection: string, options?: ScanOptions): Promise<ScanResult> {
    return this.read((reader) => reader.scan(collection, options));
  }

  search(collection: string, options: SearchOptions): Promise<SearchResult> {
    return this.read((reader) => reader.search(collection, options));
  }

  countDocuments(collection: string, partitions?: readonly number[]): Promise<number> {
    return this.read((reader) => reader.countDocuments(collection, partitions));
  }

  /** On a read thread: dbstat reads every page of the search store. */
  storeBytes(): Promise<CollectionStoreBytes[]> {
    return this.read((reader) => reader.storeBytes());
  }

  status(): Promise<ServeStatus> {
    return this.applier.status();
  }

  ready(): Promise<boolean> {
    return this.applier.ready();
  }

  rebuild(): Promise<void> {
    return this.applier.rebuild();
  }

  snapshot(dir: string): Promise<SnapshotResult> {
    return this.applier.snapshot(dir);
  }

  private async read<T>(call: (reader: ServeClient) => Promise<T>): Promise<T> {
    let chosen = 0;
    for (let i = 1; i < this.out.length; i++) if (this.out[i] < this.out[chosen]) chosen = i;
    this.out[chosen] += 1;
    try {
      return await call(this.readers[chosen]);
    } finally {
      this.out[chosen] -= 1;
    }
  }
}
