/**
 * The views the log declares, read from the views topic (shared/topics.ts VIEWS_TOPIC) forward
 * from where the last read stopped. `current()` answers a catalog that includes every definition
 * acknowledged before it was called: callers that arrive while a read is under way wait for the
 * next one, which begins after them, so a write to a view declared a moment ago is refused.
 */
import { TailbaseError } from './errors.js';
import type { LogClient } from './log-api.js';
import { VIEWS_TOPIC } from './topics.js';
import { parseViewDefinition, type ParsedView, type ViewDefinition } from './view-definition.js';
import { readInternalTopic } from './internal-topic-reader.js';

export interface DeclaredView {
  view: ParsedView;
  definition: ViewDefinition;
  /** The offset of its definition record in the views topic. */
  version: number;
  /** The topic its output goes to: the view's name for its first version, its own for each redefinition. */
  topic: string;
}

/** A redefinition being built beside the version that serves (views/README.md, Reprocessing). */
export interface ViewRebuild extends DeclaredView {
  /** Source partition → the source's end offset when it was declared: caught up at these, it swaps. */
  targets: Record<string, number>;
}

/** A declared view: the version reads see, and the one being built to replace it, if any. */
export interface CatalogView extends DeclaredView {
  rebuild: ViewRebuild | null;
  /** Topics of its versions replaced or abandoned: the processor host deletes them. */
  retired: string[];
}

/**
 * The record key of a view's rebuild: no view name holds `#`, so it cannot be a view's key, and
 * a reader that does not know it skips it (its value is no definition).
 */
export const REBUILD_KEY_SUFFIX = '#rebuild';

/** What a swap writes under the view's key: the rebuilt version now serves. */
export interface SwapRecord {
  definition: ViewDefinition;
  version: number;
  topic: string;
  retired: string[];
}

/** What a redefinition writes under the rebuild key. */
export interface RebuildRecord {
  definition: ViewDefinition;
  topic: string;
  targets: Record<string, number>;
  retired: string[];
}

const utf8 = new TextDecoder('utf-8');

export class ViewCatalog {
  private readonly records = new ViewRecords();
  private next = 0;
  /** When the last read that succeeded began (Date.now()); -Infinity before any. */
  private readStartedAtMs = -Infinity;
  private running: Promise<void> = Promise.resolve();
  private queued: Promise<void> | null = null;

  constructor(
    private readonly log: LogClient,
    private readonly readBytesMax: number,
  ) {}

  /** 409 `view_read_only` when the collection is a view or a version's topic: only its processor writes it. */
  async refuseWrite(collection: string): Promise<void> {
    if (viewOfTopic(await this.current(), collection) !== null) {
      throw new TailbaseError(
        409,
        'view_read_only',
        `${collection} is a view: it is written only by processing its source`,
        { collection },
      );
    }
  }

  /**
   * The catalog as of a read that began at most `maxAgeMs` ago, without reading the log; null
   * when the last read is older (or there was none).
   */
  recent(maxAgeMs: number): ReadonlyMap<string, CatalogView> | null {
    return Date.now() - this.readStartedAtMs <= maxAgeMs ? this.records.views : null;
  }

  /** Every view declared by a definition acknowledged before this call, by name. */
  async current(): Promise<ReadonlyMap<string, CatalogView>> {
    const start = () => {
      this.queued = null;
      this.running = this.readNew();
      return this.running;
    };
    // After a failed read too: its caller has its error, the next read starts afresh.
    this.queued ??= this.running.then(start, start);
    await this.queued;
    return this.records.views;
  }

  private async readNew(): Promise<void> {
    const startedAtMs = Date.now();
    try {
      // The usual case, nothing new, in one read of the partition's end; anything else (records,
      // or a start moved past `next` by compaction) goes the whole way.
      const tail = await this.log
        .read(VIEWS_TOPIC, 0, this.next, { maxBytes: this.readBytesMax, waitMs: 0 })
        .catch(() => null);
      if (tail !== null && tail.batches.length === 0 && tail.endOffset <= this.next) {
        this.readStartedAtMs = startedAtMs;
        return;
      }
      this.next = await readInternalTopic(
        this.log,
        VIEWS_TOPIC,
        this.next,
        this.readBytesMax,
        (key, value, offset) => {
          if (key !== null) this.records.apply(key, value, offset);
        },
      );
      this.readStartedAtMs = startedAtMs;
    } catch (error) {
      // A Kafka cluster holds no views topic until the first view is declared.
      if (!(error instanceof TailbaseError && error.status === 404)) throw error;
      this.readStartedAtMs = startedAtMs;
    }
  }
}

/**
 * The views topic's records taken in offset order: what every reader of it concludes, a function
 * of each key's last record (views/README.md, Reprocessing), so a compacted topic reads the same.
 */
export class ViewRecords {
  readonly views = new Map<string, CatalogView>();
  /** Per view, the offset of its last rebuild record (null: a null one): which swap holds. */
  private readonly lastRebuild = new Map<string, number | null>();

  apply(key: string, value: Uint8Array | null, offset: number): void {
    if (key.endsWith(REBUILD_KEY_SUFFIX)) {
      this.applyRebuild(key.slice(0, -REBUILD_KEY_SUFFIX.length), value, offset);
      return;
    }
    if (value === null) {
      this.views.delete(key);
      return;
    }
    const swap = swapOf(key, value);
    const current = this.views.get(key);
    if (swap !== null) {
      // A swap holds when the rebuild it names is the last declared: not after a drop (whose null
      // rebuild record comes first) nor after a newer redefinition. None seen: compaction took
      // its record for a later one, which then comes after this swap.
      const last = this.lastRebuild.get(key);
      if (last === undefined || last === swap.version) {
        this.views.set(key, { ...swap, rebuild: null, retired: swap.retired });
      }
      return;
    }
    const declared = declaredView(key, value, offset);
    if (declared !== null && current === undefined) {
      this.views.set(key, { ...declared, rebuild: null, retired: [] });
    }
  }

  /** A redefinition of a declared view starts its rebuild; null abandons it. */
  private applyRebuild(name: string, value: Uint8Array | null, offset: number): void {
    this.lastRebuild.set(name, value === null ? null : offset);
    const current = this.views.get(name);
    if (current === undefined || offset <= current.version) return;
    if (value === null) {
      const retired = current.rebuild === null ? [] : [current.rebuild.topic];
      this.views.set(name, {
        ...current,
        rebuild: null,
        retired: [...current.retired, ...retired],
      });
      return;
    }
    const record = parseRecord<RebuildRecord>(value);
    if (record === null) return;
    try {
      const rebuild: ViewRebuild = {
        view: parseViewDefinition(name, record.definition),
        definition: record.definition,
        version: offset,
        topic: record.topic,
        targets: record.targets,
      };
      this.views.set(name, {
        ...current,
        rebuild,
        retired: [...current.retired, ...record.retired],
      });
    } catch {
      // An invalid definition, which no gateway writes, is skipped.
    }
  }
}

function parseRecord<T>(value: Uint8Array): T | null {
  try {
    const parsed = JSON.parse(utf8.decode(value)) as unknown;
    return typeof parsed === 'object' && parsed !== null && 'definition' in parsed
      ? (parsed as T)
      : null;
  } catch {
    return null;
  }
}

function swapOf(name: string, value: Uint8Array): (DeclaredView & { retired: string[] }) | null {
  const record = parseRecord<SwapRecord>(value);
  if (record === null) return null;
  try {
    return {
      view: parseViewDefinition(name, record.definition),
      definition: record.definition,
      version: record.version,
      topic: record.topic,
      retired: record.retired,
    };
  } catch {
    return null;
  }
}

/**
 * One definition record as every reader of the views topic takes it: the first valid definition
 * of a name holds until a null record drops it (two PUTs that raced: the first appended wins, and
 * the loser's route answers 409); an invalid one, which no gateway writes, is skipped.
 */
export function declaredView(name: string, value: Uint8Array, offset: number): DeclaredView | null {
  try {
    const definition = JSON.parse(utf8.decode(value)) as ViewDefinition;
    return {
      view: parseViewDefinition(name, definition),
      definition,
      version: offset,
      topic: name,
    };
  } catch {
    return null;
  }
}

/** The topic a collection or view is read from: a view's serving version's; else its name. */
export function topicOf(views: ReadonlyMap<string, CatalogView>, name: string): string {
  return views.get(name)?.topic ?? name;
}

/**
 * The topics whose settings a collection's name sets: its own; a view's serving version's, then
 * its rebuild's (which serves next).
 */
export function settingsTopics(views: ReadonlyMap<string, CatalogView>, name: string): string[] {
  const view = views.get(name);
  if (view === undefined) return [name];
  return view.rebuild === null ? [view.topic] : [view.topic, view.rebuild.topic];
}

/** The view whose name or version's topic `topic` is; null when it is a collection's. */
export function viewOfTopic(
  views: ReadonlyMap<string, CatalogView>,
  topic: string,
): CatalogView | null {
  const named = views.get(topic);
  if (named !== undefined) return named;
  for (const view of views.values()) {
    if (view.topic === topic || view.rebuild?.topic === topic) return view;
  }
  return null;
}

/** The name a topic is read by: the view's when it is the topic of a view's serving version. */
export function servedName(views: ReadonlyMap<string, CatalogView>, topic: string): string {
  const owner = viewOfTopic(views, topic);
  return owner !== null && owner.topic === topic ? owner.view.name : topic;
}

/** The chain of sources from a view down to its collection, for cycle checks and tokens. */
export function sourceChain(views: ReadonlyMap<string, DeclaredView>, from: string): string[] {
  const chain = [from];
  for (let at = views.get(from); at !== undefined; at = views.get(at.view.from)) {
    if (chain.includes(at.view.from)) break;
    chain.push(at.view.from);
  }
  return chain;
}

/**
 * The topics views' processors write, which the epoch rule fences (shared/view-epoch.ts): each
 * view's name, the topic of the version that serves, of the one being rebuilt, and of versions
 * retired but perhaps not yet deleted.
 */
export function viewTopics(views: ReadonlyMap<string, CatalogView>): Set<string> {
  const topics = new Set<string>();
  for (const view of views.values()) {
    topics.add(view.view.name).add(view.topic);
    if (view.rebuild !== null) topics.add(view.rebuild.topic);
    for (const retired of view.retired) topics.add(retired);
  }
  return topics;
}
