/**
 * Where each record key is in a topic, read back over a LogClient partition by partition from
 * offset 0 to the end: a key in two places is a duplicate, an acknowledged key in none was lost.
 */
import { decodeRecords, iterateBatches } from '../../shared/batch-codec.js';
import type { LogClient } from '../../shared/log-api.js';

export interface StoredAt {
  partition: number;
  offset: number;
}

export interface StoredRecord extends StoredAt {
  key: string;
  /** null for a tombstone. */
  value: Uint8Array | null;
}

/** Every record of the topic, partition by partition, in offset order. */
export async function storedRecords(
  log: LogClient,
  topic: string,
  partitions: number,
): Promise<StoredRecord[]> {
  const records: StoredRecord[] = [];
  for (let partition = 0; partition < partitions; partition++) {
    for (let offset = 0; ;) {
      const read = await log.read(topic, partition, offset);
      for (const { bytes } of iterateBatches(read.batches)) {
        for (const record of decodeRecords(bytes)) {
          if (record.offset < offset) continue;
          records.push({ partition, offset: record.offset, key: record.key, value: record.value });
          offset = record.offset + 1;
        }
      }
      if (offset >= read.endOffset) break;
    }
  }
  return records;
}

export async function storedKeys(
  log: LogClient,
  topic: string,
  partitions: number,
): Promise<Map<string, StoredAt[]>> {
  const stored = new Map<string, StoredAt[]>();
  for (const { key, partition, offset } of await storedRecords(log, topic, partitions)) {
    stored.set(key, [...(stored.get(key) ?? []), { partition, offset }]);
  }
  return stored;
}
