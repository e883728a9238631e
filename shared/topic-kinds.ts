/**
 * Which topics are views' (fenced by the epoch rule, view-epoch.ts) and which are collections'
 * (applied whatever headers their records carry): the one rule, for a serve-node
 * (serve-node/view-topic-fences.ts) and for a change feed (gateway/feed-fences.ts).
 *
 * The kind is a function of the log: a view is named in the views topic before its processor
 * writes its topic (a redefinition's topic is created just before its record, empty). So a look
 * at the views topic that names a topic decides it a view's; one that began after a record of the
 * topic carrying a fence header was read, and does not name it, decides it a collection's:
 * had it been a view's, the look would have named it (a later look that names it finds a view
 * declared since under the name, on a topic of its own). A topic no look named and of which no
 * fence header was read before a look began stays `unknown`: its records pass as those of a view's
 * partition before its first claim would, up to its first record carrying a fence header, which
 * waits for such a look. What each side does while it waits is its own.
 *
 * A decision holds for the topic of the name as it was when the look began: a drop of the name
 * meanwhile (`forget`) makes the look decide nothing of it, so a topic created later under the
 * name is asked about afresh.
 */
import type { StoredRecord } from './batch-codec.js';
import { epochOf } from './view-epoch.js';

/** `unknown`: no look named it, and none began after one of its fence headers was read. */
export type TopicKind = 'view' | 'collection' | 'unknown';

/** The index of the first record carrying a fence header (a claim or an epoch); −1: none. */
export function fenceHeaderAt(records: readonly StoredRecord[]): number {
  return records.findIndex((record) => epochOf(record) !== null);
}

/** Where a look at the views topic began: what `decide` needs to know of drops since. */
export interface LookMark {
  readonly forgets: number;
}

export class TopicKinds {
  private readonly views = new Set<string>();
  private readonly collections = new Set<string>();
  /** Drops counted so far; each dropped name keeps the count its last drop made. */
  private forgets = 0;
  private readonly forgottenAt = new Map<string, number>();

  of(topic: string): TopicKind {
    if (this.views.has(topic)) return 'view';
    return this.collections.has(topic) ? 'collection' : 'unknown';
  }

  /** Marks the start of a look (before the views topic is read). */
  lookBegins(): LookMark {
    return { forgets: this.forgets };
  }

  /**
   * Records what a look that began at `mark` found: `named`, the topics the views topic names;
   * `headed`, topics of which a record carrying a fence header was read before the look began.
   * A named topic is recorded a view's when it is headed or `keeps` it; a headed one not named, a
   * collection's. Answers the headed topics it decided (not those dropped since the look began).
   */
  decide(
    mark: LookMark,
    named: ReadonlySet<string>,
    headed: readonly string[],
    keeps: (topic: string) => boolean,
  ): string[] {
    const unchanged = (topic: string) => (this.forgottenAt.get(topic) ?? 0) <= mark.forgets;
    for (const topic of named) {
      if (unchanged(topic) && (keeps(topic) || headed.includes(topic))) this.views.add(topic);
    }
    const decided = headed.filter(unchanged);
    for (const topic of decided) if (!named.has(topic)) this.collections.add(topic);
    return decided;
  }

  /** The name dropped: what a look under way finds of it is not recorded. */
  forget(topic: string): void {
    this.views.delete(topic);
    this.collections.delete(topic);
    this.forgottenAt.set(topic, ++this.forgets);
  }
}
