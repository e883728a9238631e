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
}

const utf8 = new TextDecoder('utf-8');

export class ViewCatalog {
  private readonly views = new Map<string, DeclaredView>();
  private next = 0;
  private running: Promise<void> = Promise.resolve();
  private queued: Promise<void> | null = null;

  constructor(
    private readonly log: LogClient,
    private readonly readBytesMax: number,
  ) {}

  /** 409 `view_read_only` when the collection is a view: only its processor writes it. */
  async refuseWrite(collection: string): Promise<void> {
    if ((await this.current()).has(collection)) {
      throw new TailbaseError(
        409,
        'view_read_only',
        `${collection} is a view: it is written only by processing its source`,
        { collection },
      );
    }
  }

  /** Every view declared by a definition acknowledged before this call, by name. */
  async current(): Promise<ReadonlyMap<string, DeclaredView>> {
    const start = () => {
      this.queued = null;
      this.running = this.readNew();
      return this.running;
    };
    // After a failed read too: its caller has its error, the next read starts afresh.
    this.queued ??= this.running.then(start, start);
    await this.queued;
    return this.views;
  }

  private async readNew(): Promise<void> {
    try {
      // The usual case, nothing new, in one read of the partition's end; anything else (records,
      // or a start moved past `next` by compaction) goes the whole way.
      const tail = await this.log
        .read(VIEWS_TOPIC, 0, this.next, { maxBytes: this.readBytesMax, waitMs: 0 })
        .catch(() => null);
      if (tail !== null && tail.batches.length === 0 && tail.endOffset <= this.next) return;
      this.next = await readInternalTopic(
        this.log,
        VIEWS_TOPIC,
        this.next,
        this.readBytesMax,
        (key, value, offset) => {
          if (key !== null) this.apply(key, value, offset);
        },
      );
    } catch (error) {
      // A Kafka cluster holds no views topic until the first view is declared.
      if (!(error instanceof TailbaseError && error.status === 404)) throw error;
    }
  }

  private apply(name: string, value: Uint8Array | null, offset: number): void {
    if (value === null) {
      this.views.delete(name);
      return;
    }
    const declared = declaredView(name, value, offset);
    if (declared !== null && !this.views.has(name)) this.views.set(name, declared);
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
    return { view: parseViewDefinition(name, definition), definition, version: offset };
  } catch {
    return null;
  }
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
