/**
 * Idempotent producers, as Kafka keeps them per partition: for each producer id its epoch, the
 * last sequence appended (sequences count records, so a batch covers baseSequence through
 * baseSequence + lastOffsetDelta) and the offsets of its recent batches, so a retry of an
 * appended batch is answered with its original offsets, a gap is refused, and a producer fenced
 * by a newer epoch is refused. Snapshotted when a segment closes; the active segment is replayed
 * over it.
 */
import { NO_PRODUCER_ID, SEQUENCE_MAX } from '../shared/batch-codec.js';
import { TailbaseError } from '../shared/errors.js';

export interface ProducerBatch {
  firstSequence: number;
  lastSequence: number;
  baseOffset: number;
  lastOffset: number;
}

/** What a batch says of its producer: id, epoch, and its first and last sequence. */
export interface ProducerAppend {
  producerId: number;
  producerEpoch: number;
  firstSequence: number;
  lastSequence: number;
}

interface ProducerEntry {
  epoch: number;
  lastSequence: number;
  lastSeenMs: number;
  recent: ProducerBatch[];
}

export type SequenceCheck =
  { kind: 'append' } | { kind: 'duplicate'; batch: ProducerBatch } | { kind: 'none' };

/** The sequence after `sequence`: Kafka's wrap from SEQUENCE_MAX to 0. */
function nextSequence(sequence: number): number {
  return sequence === SEQUENCE_MAX ? 0 : sequence + 1;
}

/** A batch's last sequence, wrapping as Kafka's producers do. */
export function lastSequenceOf(baseSequence: number, lastOffsetDelta: number): number {
  return baseSequence < 0 ? baseSequence : (baseSequence + lastOffsetDelta) % (SEQUENCE_MAX + 1);
}

export class ProducerState {
  private readonly producers = new Map<number, ProducerEntry>();
  private readonly recentMax: number;
  private readonly expiryMs: number;

  constructor(recentMax: number, expiryMs: number) {
    this.recentMax = recentMax;
    this.expiryMs = expiryMs;
  }

  /**
   * Decides what an incoming batch is; throws 409 for a fenced epoch, a gap, an unknown producer
   * mid-stream, or a retry older than the batches remembered.
   */
  check(append: ProducerAppend): SequenceCheck {
    const { producerId: id, producerEpoch: epoch, firstSequence: sequence } = append;
    if (id === NO_PRODUCER_ID || sequence < 0) return { kind: 'none' };
    const entry = this.producers.get(id);
    if (entry === undefined) {
      if (sequence === 0) return { kind: 'append' };
      throw unknownProducer(id, sequence);
    }
    if (epoch < entry.epoch) {
      throw new TailbaseError(
        409,
        'invalid_producer_epoch',
        `producer ${id} has epoch ${entry.epoch}; epoch ${epoch} is fenced`,
        { producerId: id, producerEpoch: epoch, currentEpoch: entry.epoch },
      );
    }
    if (epoch > entry.epoch) {
      if (sequence === 0) return { kind: 'append' };
      throw new TailbaseError(
        409,
        'sequence_gap',
        `epoch ${epoch} of producer ${id} must start at sequence 0, not ${sequence}`,
        { producerId: id, producerEpoch: epoch, sequence, expected: 0 },
      );
    }
    if (sequence === nextSequence(entry.lastSequence)) return { kind: 'append' };
    const batch = entry.recent.find(
      (b) => b.firstSequence === sequence && b.lastSequence === append.lastSequence,
    );
    if (batch) return { kind: 'duplicate', batch };
    if (sequence <= entry.lastSequence) {
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
      `sequence ${sequence} of producer ${id} skips ahead; expected ${nextSequence(entry.lastSequence)}`,
      { producerId: id, sequence, expected: nextSequence(entry.lastSequence) },
    );
  }

  /** Records an appended batch (a new epoch starts the producer's state afresh). */
  record(
    append: ProducerAppend,
    offsets: { baseOffset: number; lastOffset: number },
    nowMs: number,
  ): void {
    const { producerId: id, producerEpoch: epoch } = append;
    if (id === NO_PRODUCER_ID || append.firstSequence < 0) return;
    let entry = this.producers.get(id);
    if (entry === undefined || epoch > entry.epoch) {
      entry = { epoch, lastSequence: -1, lastSeenMs: nowMs, recent: [] };
      this.producers.set(id, entry);
    }
    entry.lastSequence = append.lastSequence;
    entry.lastSeenMs = Math.max(entry.lastSeenMs, nowMs);
    entry.recent.push({
      firstSequence: append.firstSequence,
      lastSequence: append.lastSequence,
      ...offsets,
    });
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
    for (const [id, entry] of JSON.parse(bytes.toString('utf8')) as [number, ProducerEntry][]) {
      if (!Number.isSafeInteger(id) || !Number.isInteger(entry.epoch)) {
        throw new Error('producer snapshot entry is not {producerId, epoch, ...}');
      }
      state.producers.set(id, entry);
    }
    return state;
  }
}

/**
 * 409 for a batch of a producer the partition has no state of whose sequence is not 0: its
 * earlier batches are not here (expired, or never written), so this one cannot follow them.
 */
export function unknownProducer(producerId: number, sequence: number): TailbaseError {
  return new TailbaseError(
    409,
    'unknown_producer',
    `producer ${producerId} is unknown to this log`,
    {
      producerId,
      sequence,
      expected: 0,
    },
  );
}
