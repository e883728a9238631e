/**
 * What concurrent writers sent to a log and what it acknowledged, and the check of a log against
 * it: every acknowledged append is in the log exactly once at the offsets it was acknowledged
 * with (a compacted record may only be missing behind a newer record of its key), offsets only
 * grow (and are dense where nothing compacts), and nothing is in the log that was not sent.
 */
import { decodeRecords, encodeBatch, type LogRecord } from '../../shared/batch-codec.js';
import type { LogClient } from '../../shared/log-api.js';
import { lastOffsetOf, producerBytes, readPartition } from './log-batches.js';
import type { Random } from './random.js';

export interface AckedAppend {
  topic: string;
  partition: number;
  baseOffset: number;
  lastOffset: number;
  sent: Buffer;
}

/** One writer's idempotent producer in one topic-partition: sequences count its records there. */
export interface IdempotentProducer {
  producerId: number;
  producerEpoch: number;
  nextSequence: number;
  /** Sent and not answered (cut off): it may or may not be in the log. */
  pending: Buffer | null;
  /** The last batch acknowledged, which a retry must get back as a duplicate. */
  lastAcked: AckedAppend | null;
}

export class AppendHistory {
  readonly acks: AckedAppend[] = [];
  /** Every record value ever sent (each is unique). */
  private readonly sentValues = new Set<string>();
  /** Batches made, part of each value so that values stay unique whatever the tags. */
  private batchesMade = 0;

  /**
   * A batch of records with unique values, keys from `keys` (few: compaction has work): a count
   * (`k0`, `k1`, ...) or the keys themselves (those of one partition, for a Kafka listener); a
   * random size unless `shape` fixes the record count and the padding of each value.
   */
  makeBatch(
    random: Random,
    tag: string,
    keys: number | readonly string[],
    producer: IdempotentProducer | null,
    shape?: { records: number; padBytes: number },
  ): Buffer {
    const count = shape?.records ?? random.pick([1, 1, 2, 5, 12]);
    const batch = this.batchesMade++;
    const records: LogRecord[] = Array.from({ length: count }, (_, i) => {
      const pad = 'x'.repeat(shape?.padBytes ?? random.int(0, 300));
      const value = JSON.stringify({ tag: `${tag}.${batch}.${i}`, pad });
      this.sentValues.add(value);
      return {
        key: typeof keys === 'number' ? `k${random.int(0, keys - 1)}` : random.pick(keys),
        value: Buffer.from(value),
        timestampMs: Date.now(),
      };
    });
    if (producer === null) return encodeBatch(records);
    const baseSequence = producer.nextSequence;
    producer.nextSequence += records.length;
    return encodeBatch(records, {
      producerId: producer.producerId,
      producerEpoch: producer.producerEpoch,
      baseSequence,
    });
  }

  acked(ack: AckedAppend): void {
    this.acks.push(ack);
  }

  /**
   * Checks one topic-partition of `client`'s log against the history; `dense`: nothing compacts
   * it, so its offsets run from 0 with no gap and every batch is stored as sent. Throws on the
   * first violation, naming it.
   */
  async check(
    client: LogClient,
    topic: string,
    partition: number,
    dense: boolean,
  ): Promise<number> {
    const where = `${topic}:${partition}`;
    const { batches, endOffset } = await readPartition(client, topic, partition);
    const byOffset = new Map<number, { key: string; value: string }>();
    const newestOfKey = new Map<string, number>();
    const batchAt = new Map<number, Buffer>();
    const values = new Set<string>();
    let next = 0;
    for (const { header, bytes } of batches) {
      if (dense ? header.baseOffset !== next : header.baseOffset < next) {
        throw new Error(`${where}: batch at ${header.baseOffset} after offsets up to ${next - 1}`);
      }
      next = lastOffsetOf(header) + 1;
      batchAt.set(header.baseOffset, bytes);
      for (const record of decodeRecords(bytes)) {
        const value = Buffer.from(record.value!).toString('utf8');
        if (!this.sentValues.has(value)) throw new Error(`${where}@${record.offset}: never sent`);
        if (values.has(value)) throw new Error(`${where}@${record.offset}: stored twice`);
        values.add(value);
        byOffset.set(record.offset, { key: record.key, value });
        newestOfKey.set(record.key, record.offset);
      }
    }
    if (dense ? endOffset !== next : endOffset < next) {
      throw new Error(`${where}: end offset ${endOffset}, batches end at ${next}`);
    }
    let checked = 0;
    for (const ack of this.acks) {
      if (ack.topic !== topic || ack.partition !== partition) continue;
      checked++;
      const at = `${where}: acknowledged ${ack.baseOffset}..${ack.lastOffset}`;
      if (ack.lastOffset >= endOffset) throw new Error(`${at} is past the end ${endOffset}`);
      const stored = batchAt.get(ack.baseOffset);
      if (dense) {
        if (stored === undefined) throw new Error(`${at} is missing`);
        if (!producerBytes(stored).equals(producerBytes(ack.sent)))
          throw new Error(`${at} differs`);
      }
      for (const record of decodeRecords(ack.sent)) {
        const offset = ack.baseOffset + record.offset;
        const found = byOffset.get(offset);
        const value = Buffer.from(record.value!).toString('utf8');
        if (found !== undefined && found.key === record.key && found.value === value) continue;
        if (found === undefined && (newestOfKey.get(record.key) ?? -1) > offset) continue;
        throw new Error(`${at}: record at ${offset} lost`);
      }
    }
    return checked;
  }
}
