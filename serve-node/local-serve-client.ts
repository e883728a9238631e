/**
 * The serve contract (shared/serve-api.ts) bound in-process to a ServeNode, for `tailbase start`:
 * reads run through the same ServeReads as the HTTP routes (routes.ts), so they check the same
 * bounds and wait the same way, and documents pass as the stored JSON text, never parsed.
 */
import { badRequest } from '../shared/errors.js';
import type {
  BatchedGet,
  BatchedGetAnswer,
  CollectionStoreBytes,
  BatchedGetter,
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
import { checkHostedPartitions, checkKey, needsOf, parseSettingsWaitFor } from './read-params.js';
import { ServeReads, type ReadCore, type ReadWait } from './reads.js';
import { checkCollection } from '../shared/collection-name.js';

/** What the client asks of the node beyond reads. */
export interface LocalServeCore extends ReadCore {
  status(): ServeStatus;
  ready(): boolean;
  rebuild(reason: string): Promise<void>;
  dropCollection(collection: string, reason: string): Promise<void>;
  snapshot(dir: string): Promise<SnapshotResult>;
}

export class LocalServeClient implements ServeClient, BatchedGetter {
  private readonly reads: ServeReads;
  private readonly hosted: ReadonlySet<number>;

  constructor(
    private readonly core: LocalServeCore,
    private readonly onRebuildError: (error: unknown) => void,
  ) {
    this.reads = new ServeReads(core);
    this.hosted = new Set(core.hosted);
  }

  async get(collection: string, key: string, options: ServeReadOptions = {}): Promise<GetResult> {
    const { doc, applied } = await this.reads.get(
      checkCollection(collection),
      checkKey(key),
      this.wait(options),
    );
    return { doc: doc ?? null, applied };
  }

  /**
   * Many key reads at once through ServeReads.getMany, none waiting. An item whose offsets are not
   * applied yet, or that is not a valid read, answers `pending`: asked alone, it waits or gets
   * its own 400.
   */
  getMany(items: readonly BatchedGet[]): BatchedGetAnswer[] {
    const checked = items.map(({ collection, key, waitFor }) => {
      try {
        return {
          collection: checkCollection(collection),
          key: checkKey(key),
          needs: needsOf(waitFor, this.hosted),
        };
      } catch {
        return null;
      }
    });
    const { answers, applied } = this.reads.getMany(checked.filter((item) => item !== null));
    let answered = 0;
    return checked.map((item) => {
      if (item === null) return 'pending';
      const doc = answers[answered++];
      return doc === false ? 'pending' : { doc, applied: applied[item.collection] };
    });
  }

  async countDocuments(collection: string, partitions?: readonly number[]): Promise<number> {
    return this.reads.countDocuments(
      checkCollection(collection),
      checkHostedPartitions(partitions, this.hosted),
    );
  }

  async storeBytes(): Promise<CollectionStoreBytes[]> {
    return this.reads.storeBytes();
  }

  async scan(collection: string, options: ScanOptions = {}): Promise<ScanResult> {
    const { prefix, start, end, after, afterSort, limit, partitions, filter, sort } = options;
    return this.reads.scan(checkCollection(collection), {
      range: { prefix, start, end, after },
      afterSort,
      filter,
      sort,
      limit,
      partitions: checkHostedPartitions(partitions, this.hosted),
      ...this.wait(options),
    });
  }

  async search(collection: string, options: SearchOptions): Promise<SearchResult> {
    const { q, limit, offset, highlight, partitions, filter, sort, facets } = options;
    return this.reads.search(checkCollection(collection), {
      q,
      filter,
      sort,
      facets,
      limit,
      offset,
      highlight: highlight === true,
      partitions: checkHostedPartitions(partitions, this.hosted),
      ...this.wait(options),
    });
  }

  async status(): Promise<ServeStatus> {
    return this.core.status();
  }

  async ready(): Promise<boolean> {
    return this.core.ready();
  }

  /** Starts a rebuild and answers at once, as the admin route does (202); progress is in status. */
  async rebuild(): Promise<void> {
    this.core.rebuild('admin_request').catch(this.onRebuildError);
  }

  /** Settles once no read answers from the collection (its caller bounds the wait). */
  dropCollection(collection: string): Promise<void> {
    return this.core.dropCollection(checkCollection(collection), 'admin_request');
  }

  async snapshot(dir: string): Promise<SnapshotResult> {
    if (!dir.startsWith('/')) {
      throw badRequest('invalid_snapshot_dir', 'a snapshot directory is an absolute path');
    }
    return this.core.snapshot(dir);
  }

  private wait(options: ServeReadOptions): ReadWait {
    return {
      needs: needsOf(options.waitFor, this.hosted),
      settingsNeed: parseSettingsWaitFor(options.settingsWaitFor),
      waitMs: options.waitMs,
      signal: options.signal,
    };
  }
}
