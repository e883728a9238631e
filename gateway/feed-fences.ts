/**
 * The view fence as one change feed applies it (shared/view-epoch.ts): of a view's topic it leaves
 * out exactly what a serve-node leaves out (the processors' claims, a fenced writer's records),
 * whatever offset the feed starts at, and of a collection's topic nothing.
 *
 * Which topics are views' comes from the views topic, as on a serve-node (serve-node/view-fence.ts):
 * a topic is looked up at its first read answer; one not named then is a collection's until one of
 * its records carries a fence header, when a look that begins after that read decides for good (a
 * view is named in the views topic before its processor writes its topic).
 *
 * The greatest epoch of a view's partition is counted from the partition's log start, as a
 * serve-node counts it: a feed that starts past a claim first reads the records before its start
 * (their headers decide, nothing is sent), so a fenced writer's record after that claim is left
 * out here too. That costs one read of the partition up to the feed's start, once a feed.
 */
import type { StoredRecord } from '../shared/batch-codec.js';
import { unavailable } from '../shared/errors.js';
import type { LogClient } from '../shared/log-api.js';
import { readPartitionRange } from '../shared/internal-topic-reader.js';
import { topicOffsets } from '../shared/topic-offsets.js';
import { viewTopics, type ViewCatalog } from '../shared/view-catalog.js';
import { epochOf, fenceRecords } from '../shared/view-epoch.js';

export class FeedFences {
  /** Topics decided: a view's, or a collection's for good. */
  private readonly kinds = new Map<string, 'view' | 'collection'>();
  /** Topics looked up once (at their first read answer). */
  private readonly looked = new Set<string>();
  /** topic/partition → the greatest epoch of the records read so far (views' topics only). */
  private readonly epochs = new Map<string, number>();

  constructor(
    private readonly log: LogClient,
    private readonly views: ViewCatalog,
    /** Bytes a read of a partition before the feed's start asks for. */
    private readonly readBytesMax: number,
    private readonly signal: AbortSignal,
  ) {}

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
    const records = batches.flat();
    if (records.length === 0 || (await this.kindOf(topic, records)) !== 'view') {
      return batches.map(() => null);
    }
    const id = `${topic}/${partition}`;
    let before = this.epochs.get(id) ?? (await this.epochBefore(topic, partition, records[0]));
    const kept = batches.map((batch) => {
      const fenced = fenceRecords(batch, before);
      before = fenced.epochAfter;
      return new Set(fenced.kept);
    });
    this.epochs.set(id, before);
    return kept;
  }

  private async kindOf(
    topic: string,
    records: readonly StoredRecord[],
  ): Promise<'view' | 'collection' | 'unknown'> {
    const known = this.kinds.get(topic);
    if (known !== undefined) return known;
    const headed = records.some((record) => epochOf(record) !== null);
    if (this.looked.has(topic) && !headed) return 'unknown';
    const named = viewTopics(await this.views.current()).has(topic);
    this.looked.add(topic);
    if (named) this.kinds.set(topic, 'view');
    else if (headed) this.kinds.set(topic, 'collection');
    return this.kinds.get(topic) ?? 'unknown';
  }

  /** The greatest epoch of the partition's records before `first`, read from its log start. */
  private async epochBefore(
    topic: string,
    partition: number,
    first: StoredRecord,
  ): Promise<number> {
    const until = first.offset;
    const bounds = (await topicOffsets(this.log, topic, [partition])).get(partition);
    let greatest = -1;
    const unread = (why: string) =>
      unavailable(
        'feed_epochs_unread',
        `${topic}/${partition} below the feed's start ${until}: ${why}`,
      );
    let reached: number;
    try {
      reached = await readPartitionRange(
        this.log,
        { topic, partition },
        bounds?.logStartOffset ?? 0,
        until,
        { readBytesMax: this.readBytesMax, signal: this.signal },
        (record) => {
          // One record's part of the fence rule (fenceRecords): the greatest epoch only rises.
          if (record.offset < until) greatest = Math.max(greatest, epochOf(record)?.epoch ?? -1);
        },
      );
    } catch (error) {
      // Retention moved the log start past the one read first: read again from the new one.
      if ((error as { code?: unknown }).code === 'offset_out_of_range')
        throw unread('its log start moved while read');
      throw error;
    }
    // Nothing read below the feed's start: an epoch counted so far could be too low, and would
    // send a fenced writer's record. The feed retries the read after a pause.
    if (reached < until) {
      throw unread(`the log answered nothing at ${reached}`);
    }
    return greatest;
  }
}
