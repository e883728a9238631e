/**
 * The serve contract over a serve-node's threads: key reads to `keyReader` when there is one (a
 * reader on the caller's own thread: no hop), and short scans too (in key order, no filter, at
 * most `scanHereLimitMax` documents: a few key reads' work, where the hop cost the HTTP thread
 * more than the scan, issue 28); other reads (and every read without it) to the read thread
 * with the fewest calls out, everything else to the apply thread.
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
    private readonly scanHereLimitMax = 0,
  ) {
    if (readers.length === 0) throw new Error('a read pool needs at least one reader');
    this.out = readers.map(() => 0);
  }

  get(collection: string, key: string, options?: ServeReadOptions): Promise<GetResult> {
    if (this.keyReader !== null) return this.keyReader.get(collection, key, options);
    return this.read((reader) => reader.get(collection, key, options));
  }

  scan(collection: string, options: ScanOptions = {}): Promise<ScanResult> {
    if (this.keyReader !== null && this.scansHere(options)) {
      return this.keyReader.scan(collection, options);
    }
    return this.read((reader) => reader.scan(collection, options));
  }

  /** A filter or a sort may read every document for a page: those go to a read thread. */
  private scansHere({ limit, filter, sort }: ScanOptions): boolean {
    return !filter && !sort && limit !== undefined && limit <= this.scanHereLimitMax;
  }

  search(collection: string, options: SearchOptions): Promise<SearchResult> {
    return this.read((reader) => reader.search(collection, options));
  }

  countDocuments(collection: string, partitions?: readonly number[]): Promise<number> {
    return this.read((reader) => reader.countDocuments(collection, partitions));
  }

  /**
   * On the first read thread, always: dbstat reads every page of the search store, and each
   * thread keeps its own last measurement and duty bound, so one thread keeps them for the node.
   */
  storeBytes(): Promise<CollectionStoreBytes[]> {
    return this.readers[0].storeBytes();
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
