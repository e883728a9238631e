/**
 * Feeding a Replica (serve-node/replica.ts) through its apply path, as the log would: each call
 * appends records of one topic-partition as one batch at that partition's next offset and applies
 * it, in one transaction (so one FTS5 segment). And looking inside its search store: its SQLite
 * database and a collection's FTS5 table.
 */
import type Database from 'better-sqlite3';
import { encodeBatch } from '../../shared/batch-codec.js';
import { SETTINGS_TOPIC } from '../../shared/topics.js';
import type { Replica } from '../../serve-node/replica.js';

/** Record timestamps: fixed, so the same records encode to the same batch. */
const TIMESTAMP_MS = 1_700_000_000_000;

export class ReplicaFeed {
  /** topic/partition → the next offset. */
  private readonly next = new Map<string, number>();

  /** `replica` is asked for at each call: a test that reopens it goes on feeding the new one. */
  constructor(private readonly replica: () => Replica) {}

  /** Applies `[key, value]` records (null: a tombstone) as one batch at the next offset. */
  apply(topic: string, partition: number, records: Array<[string, unknown]>): void {
    const at = this.next.get(`${topic}/${partition}`) ?? 0;
    const batches = encodeBatch(
      records.map(([key, value]) => ({
        key,
        value: value === null ? null : Buffer.from(JSON.stringify(value)),
        timestampMs: TIMESTAMP_MS,
      })),
      { baseOffset: at },
    );
    this.replica().applyMany([{ topic, partition, fromOffset: at, batches }]);
    this.next.set(`${topic}/${partition}`, at + records.length);
  }

  /** The offset the next batch of a topic-partition gets; undefined before its first. */
  nextOffset(topic: string, partition: number): number | undefined {
    return this.next.get(`${topic}/${partition}`);
  }

  /** A settings record for `collection` (null restores the defaults). */
  settings(collection: string, value: unknown): void {
    this.apply(SETTINGS_TOPIC, 0, [[collection, value]]);
  }
}

/** The replica's search store database, to look at its tables or limit its size. */
export function replicaSqlite(replica: Replica): Database.Database {
  return (replica.search as unknown as { db: Database.Database }).db;
}

/** The name of the FTS5 table `collection` answers from. */
export function ftsTableOf(replica: Replica, collection: string): string {
  const id = replicaSqlite(replica)
    .prepare('SELECT table_id FROM collection_tables WHERE collection = ?')
    .pluck()
    .get(collection) as number;
  return `fts_${id}`;
}

/** The FTS5 segments of the collection's table (each has rows in its `_idx` shadow table). */
export function ftsSegments(replica: Replica, collection: string): number {
  return replicaSqlite(replica)
    .prepare(`SELECT count(DISTINCT segid) FROM ${ftsTableOf(replica, collection)}_idx`)
    .pluck()
    .get() as number;
}
