/**
 * A log record made ready for both stores: its JSON parsed once, its text normalised. A value
 * that is not valid JSON (the log accepts any bytes) is kept as a JSON string of its text, so one
 * poison record can neither stop the apply loop nor make a read answer invalid JSON.
 */
import type { StoredRecord } from '../shared/batch-codec.js';

export interface PreparedRecord {
  offset: number;
  /** The record's topic: a collection, or the settings topic (key = the collection). */
  collection: string;
  partition: number;
  key: string;
  /** The document's JSON text; null for a tombstone. */
  json: string | null;
  /** The parsed document; undefined for a tombstone. */
  doc: unknown;
}

/**
 * One topic-partition's records (already filtered to offsets >= its checkpoint) and its new
 * checkpoint.
 */
export interface PartitionChange {
  topic: string;
  partition: number;
  records: readonly PreparedRecord[];
  nextOffset: number;
  /** The greatest view epoch through nextOffset, when the partition is a view's (view-fence.ts). */
  epoch?: number;
}

export function prepareRecord(
  record: StoredRecord,
  collection: string,
  partition: number,
): PreparedRecord {
  const { offset, key } = record;
  if (record.value === null) {
    return { offset, collection, partition, key, json: null, doc: undefined };
  }
  const value = record.value;
  // Buffer's decoder is the fastest here; invalid UTF-8 becomes U+FFFD, as TextDecoder would.
  const text = Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('utf8');
  try {
    return { offset, collection, partition, key, json: text, doc: JSON.parse(text) };
  } catch {
    return { offset, collection, partition, key, json: JSON.stringify(text), doc: text };
  }
}
