/**
 * Idempotent producers: per producer id, the last batch sequence appended and the offsets of its
 * recent batches, so a retry of an appended batch is answered with its original offsets and a
 * gap is refused. Snapshotted when a segment closes; the active segment is replayed over it.
 */
import { TailbaseError } from '../shared/errors.js';

export interface ProducerBatch {
  sequence: number;
  baseOffset: number;
  lastOffset: number;
}

interface ProducerEntry {
  lastSequence: number;
  lastSeenMs: number;
  recent: ProducerBatch[];
}

export type SequenceCheck =
  { kind: 'append' } | { kind: 'duplicate'; batch: ProducerBatch } | { kind: 'none' };

const ZERO_ID = '00000000000000000000000000000000';

export class ProducerState {
  private readonly producers = new Map<string, ProducerEntry>();
  private readonly recentMax: number;
  private readonly expiryMs: number;

  constructor(recentMax: number, expiryMs: number) {
    this.recentMax = recentMax;
    this.expiryMs = expiryMs;
  }

  static idOf(producerId: Uint8Array): string {
    return Buffer.from(producerId.buffer, producerId.byteOffset, producerId.length).toString('hex');
  }

  /** Decides what an incoming batch is; throws 409 on a gap or an unknown producer mid-stream. */
  check(producerId: Uint8Array, sequence: number): SequenceCheck {
    const id = ProducerState.idOf(producerId);
    if (id === ZERO_ID || sequence < 0) return { kind: 'none' };
    const entry = this.producers.get(id);
    if (entry === undefined) {
      if (sequence === 0) return { kind: 'append' };
      throw new TailbaseError(409, 'unknown_producer', `producer ${id} is unknown to this log`, {
        producerId: id,
        sequence,
        expected: 0,
      });
    }
    if (sequence === entry.lastSequence + 1) return { kind: 'append' };
    if (sequence <= entry.lastSequence) {
      const batch = entry.recent.find((b) => b.sequence === sequence);
      if (batch) return { kind: 'duplicate', batch };
      throw new TailbaseError(
        409,
        'sequence_too_old',
        `sequence ${sequence} of producer ${id} is older than the retries this log remembers`,
        { producerId: id, sequence, lastSequence: entry.lastSequence },
      );
    }
    throw new TailbaseError(
      409,
      'sequence_gap',
      `sequence ${sequence} of producer ${id} skips ahead; expected ${entry.lastSequence + 1}`,
      { producerId: id, sequence, expected: entry.lastSequence + 1 },
    );
  }

  record(producerId: Uint8Array, batch: ProducerBatch, nowMs: number): void {
    const id = ProducerState.idOf(producerId);
    if (id === ZERO_ID || batch.sequence < 0) return;
    let entry = this.producers.get(id);
    if (entry === undefined) {
      entry = { lastSequence: -1, lastSeenMs: nowMs, recent: [] };
      this.producers.set(id, entry);
    }
    entry.lastSequence = batch.sequence;
    entry.lastSeenMs = Math.max(entry.lastSeenMs, nowMs);
    entry.recent.push(batch);
    if (entry.recent.length > this.recentMax) entry.recent.shift();
  }

  expire(nowMs: number): void {
    for (const [id, entry] of this.producers) {
      if (nowMs - entry.lastSeenMs > this.expiryMs) this.producers.delete(id);
    }
  }

  get size(): number {
    return this.producers.size;
  }

  encode(): Buffer {
    return Buffer.from(JSON.stringify([...this.producers.entries()]));
  }

  static decode(bytes: Buffer, recentMax: number, expiryMs: number): ProducerState {
    const state = new ProducerState(recentMax, expiryMs);
    for (const [id, entry] of JSON.parse(bytes.toString('utf8')) as [string, ProducerEntry][]) {
      state.producers.set(id, entry);
    }
    return state;
  }
}
