/**
 * Committed offsets: durable in the log's internal topic `__consumer_offsets` (partition 0,
 * compacted; records in group-offset-record.ts), served from a table in memory. A commit is
 * answered only after its records are durable, and the table is rebuilt by reading the topic from
 * its start, so committed offsets survive a restart. The table applies a record only when it is
 * later in the log than the one it holds, so commits answered out of order, and the rebuild,
 * leave what the log's order says.
 */
import { decodeRawRecords, encodeBatch, iterateBatches } from '../../shared/batch-codec.js';
import type { LogClient } from '../../shared/log-api.js';
import { CONSUMER_OFFSETS_TOPIC } from '../../shared/topics.js';
import {
  decodeOffsetKey,
  decodeOffsetValue,
  encodeOffsetKey,
  encodeOffsetValue,
  type CommittedOffset,
} from './group-offset-record.js';

/** Internal topics have one partition. */
const OFFSETS_PARTITION = 0;

export interface OffsetCommit {
  topic: string;
  partition: number;
  committed: CommittedOffset;
}

interface Entry {
  committed: CommittedOffset;
  /** Where the record sits in __consumer_offsets. */
  logOffset: number;
}

/** group → topic → partition → its latest commit. */
type OffsetTable = Map<string, Map<string, Map<number, Entry>>>;

export interface OffsetsLoaded {
  records: number;
  /** Records not in the coordinator's form (group-offset-record.ts), left out of the table. */
  skipped: number;
}

export class OffsetStore {
  private readonly table: OffsetTable = new Map();
  private loading: Promise<OffsetsLoaded> | null = null;

  constructor(
    private readonly log: LogClient,
    private readonly readBytes: number,
  ) {}

  /**
   * Rebuilds the table from the topic, once; every commit and fetch waits for it. A failed load
   * is tried again by the next caller.
   */
  load(): Promise<OffsetsLoaded> {
    this.loading ??= this.readTopic().catch((error: unknown) => {
      this.loading = null;
      throw error;
    });
    return this.loading;
  }

  /**
   * Appends the commits as one batch and answers once it is durable. The append takes no signal:
   * once it has started it may become durable whatever happens to the committing connection, and
   * the table must then hold what the log holds (a restart would read it), so the table is updated
   * on the append's own completion, never abandoned with the connection.
   */
  async commit(group: string, commits: readonly OffsetCommit[]): Promise<void> {
    await this.load();
    if (commits.length === 0) return;
    const batch = encodeBatch(
      commits.map((c) => ({
        key: encodeOffsetKey({ group, topic: c.topic, partition: c.partition }),
        value: encodeOffsetValue(c.committed),
        timestampMs: c.committed.commitTimestampMs,
      })),
    );
    const { baseOffset } = await this.log.append(CONSUMER_OFFSETS_TOPIC, OFFSETS_PARTITION, batch);
    commits.forEach((c, i) => this.apply(group, c.topic, c.partition, c.committed, baseOffset + i));
  }

  /** Every partition the group has committed, by topic. */
  async committedByTopic(group: string): Promise<Map<string, Map<number, CommittedOffset>>> {
    await this.load();
    const byTopic = new Map<string, Map<number, CommittedOffset>>();
    for (const [topic, partitions] of this.table.get(group) ?? []) {
      byTopic.set(topic, new Map([...partitions].map(([p, entry]) => [p, entry.committed])));
    }
    return byTopic;
  }

  private async readTopic(): Promise<OffsetsLoaded> {
    const offsets = await this.log.offsets();
    const bounds = offsets.find(
      (o) => o.topic === CONSUMER_OFFSETS_TOPIC && o.partition === OFFSETS_PARTITION,
    );
    const loaded: OffsetsLoaded = { records: 0, skipped: 0 };
    if (bounds === undefined) return loaded;
    // Commits appended meanwhile wait for this load, so the end read first is the end to reach.
    let next = bounds.logStartOffset;
    while (next < bounds.endOffset) {
      const read = await this.log.read(CONSUMER_OFFSETS_TOPIC, OFFSETS_PARTITION, next, {
        maxBytes: this.readBytes,
      });
      const from = next;
      for (const { header, bytes } of iterateBatches(read.batches)) {
        for (const record of decodeRawRecords(bytes)) {
          if (record.offset < next) continue;
          const key = decodeOffsetKey(record.key);
          const value = decodeOffsetValue(record.value);
          if (key === null || value === undefined) {
            loaded.skipped += 1;
            continue;
          }
          loaded.records += 1;
          if (value === null) this.forget(key.group, key.topic, key.partition, record.offset);
          else this.apply(key.group, key.topic, key.partition, value, record.offset);
        }
        next = Math.max(next, header.baseOffset + header.lastOffsetDelta + 1);
      }
      if (next === from) {
        throw new Error(
          `${CONSUMER_OFFSETS_TOPIC} read at offset ${from} answered nothing before its end ${bounds.endOffset}`,
        );
      }
    }
    return loaded;
  }

  private apply(
    group: string,
    topic: string,
    partition: number,
    committed: CommittedOffset,
    logOffset: number,
  ): void {
    let topics = this.table.get(group);
    if (topics === undefined) this.table.set(group, (topics = new Map()));
    let partitions = topics.get(topic);
    if (partitions === undefined) topics.set(topic, (partitions = new Map()));
    const held = partitions.get(partition);
    if (held === undefined || held.logOffset < logOffset) {
      partitions.set(partition, { committed, logOffset });
    }
  }

  private forget(group: string, topic: string, partition: number, logOffset: number): void {
    const topics = this.table.get(group);
    const partitions = topics?.get(topic);
    const held = partitions?.get(partition);
    if (held === undefined || held.logOffset > logOffset) return;
    partitions!.delete(partition);
    if (partitions!.size === 0) topics!.delete(topic);
    if (topics!.size === 0) this.table.delete(group);
  }
}
