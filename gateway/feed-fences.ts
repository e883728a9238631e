/**
 * The view fence as one change feed applies it (shared/view-epoch.ts): of a view's topic it leaves
 * out exactly what a serve-node leaves out (the processors' claims, a fenced writer's records),
 * whatever offset the feed starts at, and of a collection's topic nothing.
 *
 * Which topics are views' is decided by the rule of shared/topic-kinds.ts, from looks at the views
 * topic: a topic is looked up at its first read answer; one not named then passes until one of
 * its records carries a fence header, when a look that begins after that read decides for good.
 *
 * The greatest epoch of a view's partition is counted from the partition's log start, as a
 * serve-node rebuilt from the log counts it: a feed that starts past a claim first counts the
 * records before its start (their headers decide, nothing is sent), so a fenced writer's record
 * after that claim is left out here too. The count goes on from the gateway's mark of the
 * partition (feed-epochs.ts) when there is one at or before the feed's start, counted from the
 * log start as it is now, and leaves one at the start: a feed counts the records written since
 * the last feed's count, not the whole partition.
 */
import type { StoredRecord } from '../shared/batch-codec.js';
import { unavailable } from '../shared/errors.js';
import type { LogClient, PartitionOffsets } from '../shared/log-api.js';
import { readPartitionRange } from '../shared/internal-topic-reader.js';
import { topicOffsets } from '../shared/topic-offsets.js';
import { fenceHeaderAt, TopicKinds, type TopicKind } from '../shared/topic-kinds.js';
import { viewTopics, type ViewCatalog } from '../shared/view-catalog.js';
import { epochAfter, fenceRecords } from '../shared/view-epoch.js';
import { CallSlots } from './call-slots.js';
import type { FeedEpochs } from './feed-epochs.js';
import type { CollectionIncarnations } from './incarnations.js';

export interface FeedFencesParts {
  log: LogClient;
  views: ViewCatalog;
  /** The gateway's marks of views' partitions, shared by its feeds. */
  epochs: FeedEpochs;
  incarnations: CollectionIncarnations;
  /** Bytes a read of a partition before the feed's start asks for. */
  readBytesMax: number;
  /**
   * Such reads in flight at once: a read answer's partitions begin their counts together, and
   * each holds up to `readBytesMax`, so this times that bounds what a feed's counts hold.
   */
  readsMax: number;
  signal: AbortSignal;
  /** Hears how many records below a feed's start each count read. */
  counted(records: number): void;
  /** Hears each such read begin (1) and end (-1): the gateway sums them for /v1/status. */
  reading(delta: 1 | -1): void;
}

export class FeedFences {
  private readonly kinds = new TopicKinds();
  /** Topics looked up once (at their first read answer). */
  private readonly looked = new Set<string>();
  /** topic/partition → the greatest epoch of the records this feed read (views' topics only). */
  private readonly greatest = new Map<string, number>();
  /**
   * The log's `offsets()` under way, joined by the counts that begin while it runs (an answer's
   * partitions begin theirs at once): one listing of every topic serves them all.
   */
  private listing: Promise<readonly PartitionOffsets[]> | null = null;
  /**
   * The log's reads, each in a slot of `readsMax`: a slot per read, not per count, so counts
   * begun together move forward together, a count's first read waits for others' reads but never
   * for their whole counts (its log start, chosen before, ages only as long), and they end
   * together, their checks of the incarnation sharing a read of the topics.
   */
  private readonly slotted: Pick<LogClient, 'read'>;

  constructor(private readonly parts: FeedFencesParts) {
    const slots = new CallSlots(parts.readsMax);
    this.slotted = {
      read: (...args) =>
        slots.run(async () => {
          parts.reading(1);
          try {
            return await parts.log.read(...args);
          } finally {
            parts.reading(-1);
          }
        }),
    };
  }

  /**
   * Of each batch's records (one read answer of a topic-partition, batches in offset order, each
   * answer once), the ones that change a document; null when all do. Whatever it reads first, it
   * changes nothing before it has read it all, so a failed call can be made again.
   */
  async kept(
    topic: string,
    partition: number,
    batches: readonly (readonly StoredRecord[])[],
  ): Promise<(ReadonlySet<StoredRecord> | null)[]> {
    return (await this.ready(topic, partition, batches))();
  }

  /**
   * `kept` in two steps: reads what it needs (the topic's kind, the epoch before the batches),
   * then answers `take`, which answers the kept records and moves the partition's greatest epoch
   * past the batches. Several partitions' reads may run at once; an answer whose `take` is not
   * called counts as unread, to be read again.
   */
  async ready(
    topic: string,
    partition: number,
    batches: readonly (readonly StoredRecord[])[],
  ): Promise<() => (ReadonlySet<StoredRecord> | null)[]> {
    const records = batches.flat();
    if (records.length === 0 || (await this.kindOf(topic, records)) !== 'view') {
      return () => batches.map(() => null);
    }
    const id = `${topic}/${partition}`;
    const counted =
      this.greatest.get(id) ?? (await this.epochBefore(topic, partition, records[0].offset));
    return () => {
      let before = this.greatest.get(id) ?? counted;
      const kept = batches.map((batch) => {
        const fenced = fenceRecords(batch, before);
        before = fenced.epochAfter;
        return new Set(fenced.kept);
      });
      this.greatest.set(id, before);
      return kept;
    };
  }

  private async kindOf(topic: string, records: readonly StoredRecord[]): Promise<TopicKind> {
    const known = this.kinds.of(topic);
    if (known !== 'unknown') return known;
    const headed = fenceHeaderAt(records) >= 0;
    if (this.looked.has(topic) && !headed) return 'unknown';
    const mark = this.kinds.lookBegins();
    const named = viewTopics(await this.parts.views.current());
    this.looked.add(topic);
    this.kinds.decide(mark, named, headed ? [topic] : [], (other) => other === topic);
    return this.kinds.of(topic);
  }

  /**
   * The greatest epoch of the partition's records before `until`: counted on from the gateway's
   * mark of it when one lies at or before `until` and was counted from the log start as it is
   * now, else from its log start; leaves a mark at `until`.
   */
  private async epochBefore(topic: string, partition: number, until: number): Promise<number> {
    const { log, epochs, incarnations } = this.parts;
    const incarnation = incarnations.cached(topic);
    const bounds = (await topicOffsets(log, topic, [partition], this.listed())).get(partition);
    const logStart = bounds?.logStartOffset ?? 0;
    const mark = epochs.at(topic, partition, incarnation);
    // A mark past the start is no use: a record between the two may raise the epoch. Nor is one
    // counted from an earlier log start: its epoch may be of records retention removed since,
    // which a count from the log start (another gateway's, a serve-node's rebuild) never sees.
    const from =
      mark !== undefined && mark.next <= until && mark.start === logStart
        ? mark
        : { start: logStart, next: logStart, epoch: -1 };
    let greatest = from.epoch;
    let counted = 0;
    const unread = (why: string) =>
      unavailable(
        'feed_epochs_unread',
        `${topic}/${partition} below the feed's start ${until}: ${why}`,
      );
    let reached: number;
    try {
      reached = await readPartitionRange(
        this.slotted,
        { topic, partition },
        from.next,
        until,
        { readBytesMax: this.parts.readBytesMax, signal: this.parts.signal },
        (record) => {
          if (record.offset >= until) return;
          counted += 1;
          greatest = epochAfter(record, greatest).epoch;
        },
      );
    } catch (error) {
      // Retention moved the log start past the one read first: read again from the new one.
      if ((error as { code?: unknown }).code === 'offset_out_of_range')
        throw unread('its log start moved while read');
      throw error;
    } finally {
      this.parts.counted(counted);
    }
    // Nothing read below the feed's start: an epoch counted so far could be too low, and would
    // send a fenced writer's record. The feed retries the read after a pause.
    if (reached < until) {
      throw unread(`the log answered nothing at ${reached}`);
    }
    // The mark and the records read are of the topic as it was when its incarnation was known:
    // of one topic only if no drop came between (incarnations only grow).
    if ((await incarnations.fresh(topic)) !== incarnation)
      throw unread('its topic was dropped and created again');
    epochs.record(topic, partition, {
      incarnation,
      start: from.start,
      next: until,
      epoch: greatest,
    });
    return greatest;
  }

  /** Joins the listing of the log's offsets under way, or begins one. */
  private listed(): Promise<readonly PartitionOffsets[]> {
    this.listing ??= this.parts.log.offsets().finally(() => {
      this.listing = null;
    });
    return this.listing;
  }
}
