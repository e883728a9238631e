// Proves the log-node's idempotent producers follow Kafka's rules: sequences count records (a
// batch covers baseSequence..baseSequence + lastOffsetDelta) and the next batch must start right
// after, wrapping from SEQUENCE_MAX to 0; a retry of one of the last `recentMax` batches is
// answered with its original offsets and an older one is refused; a newer epoch starts again at
// sequence 0 and fences the older one; an unknown producer must start at 0; a batch without a
// producer is never checked; and a snapshot round trip keeps all of it.
import { describe, expect, it } from 'vitest';
import { NO_PRODUCER_ID, NO_SEQUENCE, SEQUENCE_MAX } from '../../shared/batch-codec.js';
import {
  lastSequenceOf,
  type ProducerAppend,
  ProducerState,
} from '../../log-node/producer-state.js';

const RECENT_MAX = 5;
const EXPIRY_MS = 60_000;
const T0 = 1_800_000_000_000;
const ID = 42;

/** A batch of `records` records of producer ID at `epoch` from `baseSequence`. */
function batchOf(baseSequence: number, records: number, epoch = 0, id = ID): ProducerAppend {
  return {
    producerId: id,
    producerEpoch: epoch,
    firstSequence: baseSequence,
    lastSequence: lastSequenceOf(baseSequence, records - 1),
  };
}

/** Checks `append` as the log-node does and, when it is new, records it at `baseOffset`. */
function appendTo(state: ProducerState, append: ProducerAppend, baseOffset: number, nowMs = T0) {
  const check = state.check(append);
  if (check.kind === 'append') {
    const records =
      ((append.lastSequence - append.firstSequence + SEQUENCE_MAX + 1) % (SEQUENCE_MAX + 1)) + 1;
    state.record(append, { baseOffset, lastOffset: baseOffset + records - 1 }, nowMs);
  }
  return check;
}

/** The refusal `check` throws, as {status, code, ...details}. */
function refusal(state: ProducerState, append: ProducerAppend) {
  try {
    state.check(append);
  } catch (error) {
    const e = error as { status: number; code: string; details?: Record<string, unknown> };
    return { status: e.status, code: e.code, ...e.details };
  }
  throw new Error(`batch ${JSON.stringify(append)} was not refused`);
}

describe('lastSequenceOf', () => {
  it('is the base sequence plus the last offset delta, wrapping after SEQUENCE_MAX', () => {
    expect(lastSequenceOf(0, 0)).toBe(0);
    expect(lastSequenceOf(10, 4)).toBe(14);
    expect(lastSequenceOf(SEQUENCE_MAX, 0)).toBe(SEQUENCE_MAX);
    expect(lastSequenceOf(SEQUENCE_MAX, 1)).toBe(0);
    expect(lastSequenceOf(SEQUENCE_MAX - 1, 3)).toBe(1);
    expect(lastSequenceOf(NO_SEQUENCE, 7)).toBe(NO_SEQUENCE);
  });
});

describe('producer state', () => {
  it('counts records: the next batch starts right after the last record of the one before', () => {
    const state = new ProducerState(RECENT_MAX, EXPIRY_MS);
    expect(appendTo(state, batchOf(0, 5), 100)).toEqual({ kind: 'append' });
    // One past the first batch's base sequence is inside it, not the next batch.
    expect(refusal(state, batchOf(1, 1))).toMatchObject({
      status: 409,
      code: 'sequence_too_old',
      sequence: 1,
      lastSequence: 4,
    });
    expect(refusal(state, batchOf(6, 1))).toMatchObject({
      status: 409,
      code: 'sequence_gap',
      sequence: 6,
      expected: 5,
    });
    expect(appendTo(state, batchOf(5, 3), 105)).toEqual({ kind: 'append' });
    expect(appendTo(state, batchOf(8, 1), 108)).toEqual({ kind: 'append' });
    expect(refusal(state, batchOf(10, 1))).toMatchObject({ code: 'sequence_gap', expected: 9 });
  });

  it('wraps after SEQUENCE_MAX: a batch across the wrap, then one from 0', () => {
    // A producer state restored with its last sequence just below the wrap.
    const restored = ProducerState.decode(
      Buffer.from(
        JSON.stringify([
          [ID, { epoch: 0, lastSequence: SEQUENCE_MAX - 3, lastSeenMs: T0, recent: [] }],
        ]),
      ),
      RECENT_MAX,
      EXPIRY_MS,
    );
    const across = batchOf(SEQUENCE_MAX - 2, 5);
    expect(across).toMatchObject({ firstSequence: SEQUENCE_MAX - 2, lastSequence: 1 });
    expect(appendTo(restored, across, 1000)).toEqual({ kind: 'append' });
    expect(refusal(restored, batchOf(3, 1))).toMatchObject({ code: 'sequence_gap', expected: 2 });
    expect(appendTo(restored, batchOf(2, 2), 1005)).toEqual({ kind: 'append' });
    // The batch across the wrap is still a known retry.
    expect(restored.check(across)).toEqual({
      kind: 'duplicate',
      batch: {
        firstSequence: SEQUENCE_MAX - 2,
        lastSequence: 1,
        baseOffset: 1000,
        lastOffset: 1004,
      },
    });

    // A batch ending exactly at SEQUENCE_MAX is followed by one starting at 0.
    const atMax = ProducerState.decode(
      Buffer.from(
        JSON.stringify([
          [ID, { epoch: 0, lastSequence: SEQUENCE_MAX - 2, lastSeenMs: T0, recent: [] }],
        ]),
      ),
      RECENT_MAX,
      EXPIRY_MS,
    );
    expect(appendTo(atMax, batchOf(SEQUENCE_MAX - 1, 2), 0)).toEqual({ kind: 'append' });
    expect(refusal(atMax, batchOf(SEQUENCE_MAX, 1))).toMatchObject({
      code: 'sequence_too_old',
    });
    expect(appendTo(atMax, batchOf(0, 1), 2)).toEqual({ kind: 'append' });
  });

  it('answers a retry of one of the last recentMax batches with its offsets, and refuses older ones', () => {
    const state = new ProducerState(RECENT_MAX, EXPIRY_MS);
    const sent: { append: ProducerAppend; baseOffset: number; lastOffset: number }[] = [];
    let sequence = 0;
    let offset = 0;
    for (let n = 0; n < RECENT_MAX + 2; n++) {
      const records = (n % 3) + 1;
      const append = batchOf(sequence, records);
      // Offsets of other writers' batches in between: a producer's offsets are not its sequences.
      offset += 10;
      expect(appendTo(state, append, offset)).toEqual({ kind: 'append' });
      sent.push({ append, baseOffset: offset, lastOffset: offset + records - 1 });
      sequence += records;
      offset += records;
    }
    const [tooOld, alsoTooOld, ...recent] = sent;
    expect(recent).toHaveLength(RECENT_MAX);
    for (const { append, baseOffset, lastOffset } of recent) {
      expect(state.check(append)).toEqual({
        kind: 'duplicate',
        batch: {
          firstSequence: append.firstSequence,
          lastSequence: append.lastSequence,
          baseOffset,
          lastOffset,
        },
      });
    }
    for (const { append } of [tooOld, alsoTooOld]) {
      expect(refusal(state, append)).toMatchObject({
        status: 409,
        code: 'sequence_too_old',
        sequence: append.firstSequence,
        lastSequence: sequence - 1,
      });
    }
    // A retry must be the same batch: the same first sequence with another last one is not.
    const last = recent.at(-1)!.append;
    expect(refusal(state, { ...last, lastSequence: last.lastSequence + 1 })).toMatchObject({
      code: 'sequence_too_old',
    });
    // Retries change nothing: the next batch still starts after the last one appended.
    expect(appendTo(state, batchOf(sequence, 1), 1000)).toEqual({ kind: 'append' });
  });

  it('restarts a producer at sequence 0 in a newer epoch and refuses the older epoch', () => {
    const state = new ProducerState(RECENT_MAX, EXPIRY_MS);
    const old = batchOf(0, 3, 0);
    expect(appendTo(state, old, 0)).toEqual({ kind: 'append' });
    expect(appendTo(state, batchOf(3, 2, 0), 3)).toEqual({ kind: 'append' });
    // A newer epoch must start at 0, not where the older one left off.
    expect(refusal(state, batchOf(5, 1, 1))).toMatchObject({
      status: 409,
      code: 'sequence_gap',
      producerEpoch: 1,
      sequence: 5,
      expected: 0,
    });
    expect(appendTo(state, batchOf(0, 2, 1), 5)).toEqual({ kind: 'append' });
    expect(appendTo(state, batchOf(2, 1, 1), 7)).toEqual({ kind: 'append' });
    // The older epoch is fenced: its next batch, and its retries, which are no longer remembered.
    for (const fenced of [batchOf(5, 1, 0), old]) {
      expect(refusal(state, fenced)).toMatchObject({
        status: 409,
        code: 'invalid_producer_epoch',
        producerEpoch: 0,
        currentEpoch: 1,
      });
    }
    // The new epoch's own batches are its retries.
    expect(state.check(batchOf(0, 2, 1))).toEqual({
      kind: 'duplicate',
      batch: { firstSequence: 0, lastSequence: 1, baseOffset: 5, lastOffset: 6 },
    });
    expect(state.size).toBe(1);
  });

  it('refuses an unknown producer that does not start at sequence 0', () => {
    const state = new ProducerState(RECENT_MAX, EXPIRY_MS);
    expect(refusal(state, batchOf(7, 1))).toMatchObject({
      status: 409,
      code: 'unknown_producer',
      producerId: ID,
      sequence: 7,
      expected: 0,
    });
    expect(state.size).toBe(0);
    // Whatever its epoch, a producer new to the partition starts at 0.
    expect(appendTo(state, batchOf(0, 1, 3), 0)).toEqual({ kind: 'append' });
    // Producers are independent: another id is unknown until its own first batch.
    expect(refusal(state, batchOf(1, 1, 3, ID + 1))).toMatchObject({ code: 'unknown_producer' });
    expect(appendTo(state, batchOf(0, 4, 0, ID + 1), 1)).toEqual({ kind: 'append' });
    expect(appendTo(state, batchOf(1, 1, 3), 5)).toEqual({ kind: 'append' });
    expect(state.size).toBe(2);
  });

  it('neither checks nor remembers a batch without a producer id or a sequence', () => {
    const state = new ProducerState(RECENT_MAX, EXPIRY_MS);
    const none: ProducerAppend[] = [
      {
        producerId: NO_PRODUCER_ID,
        producerEpoch: -1,
        firstSequence: NO_SEQUENCE,
        lastSequence: NO_SEQUENCE,
      },
      { producerId: NO_PRODUCER_ID, producerEpoch: 0, firstSequence: 9, lastSequence: 9 },
      { producerId: ID, producerEpoch: 0, firstSequence: NO_SEQUENCE, lastSequence: NO_SEQUENCE },
    ];
    for (const append of none) {
      expect(state.check(append)).toEqual({ kind: 'none' });
      state.record(append, { baseOffset: 0, lastOffset: 0 }, T0);
      expect(state.check(append)).toEqual({ kind: 'none' });
    }
    expect(state.size).toBe(0);
  });

  it('forgets a producer unseen for longer than the expiry', () => {
    const state = new ProducerState(RECENT_MAX, EXPIRY_MS);
    appendTo(state, batchOf(0, 1, 0, 1), 0, T0);
    appendTo(state, batchOf(0, 1, 0, 2), 1, T0 + 1000);
    state.expire(T0 + EXPIRY_MS);
    expect(state.size).toBe(2);
    state.expire(T0 + EXPIRY_MS + 1);
    expect(state.size).toBe(1);
    // Forgotten, producer 1 is unknown again; producer 2 is not.
    expect(refusal(state, batchOf(1, 1, 0, 1))).toMatchObject({ code: 'unknown_producer' });
    expect(appendTo(state, batchOf(1, 1, 0, 2), 2)).toEqual({ kind: 'append' });
  });

  it('keeps epochs, sequences and recent batches through a snapshot', () => {
    const state = new ProducerState(RECENT_MAX, EXPIRY_MS);
    appendTo(state, batchOf(0, 3, 2), 0);
    appendTo(state, batchOf(3, 2, 2), 3);
    appendTo(state, batchOf(0, 1, 0, ID + 1), 5);
    const copy = ProducerState.decode(state.encode(), RECENT_MAX, EXPIRY_MS);
    expect(copy.encode().equals(state.encode())).toBe(true);
    expect(copy.check(batchOf(3, 2, 2))).toEqual({
      kind: 'duplicate',
      batch: { firstSequence: 3, lastSequence: 4, baseOffset: 3, lastOffset: 4 },
    });
    expect(refusal(copy, batchOf(5, 1, 1))).toMatchObject({ code: 'invalid_producer_epoch' });
    expect(refusal(copy, batchOf(6, 1, 2))).toMatchObject({ code: 'sequence_gap', expected: 5 });
    expect(copy.check(batchOf(1, 1, 0, ID + 1))).toEqual({ kind: 'append' });

    for (const bad of [
      [['42', { epoch: 0, lastSequence: 0, lastSeenMs: T0, recent: [] }]],
      [[ID, { lastSequence: 0, lastSeenMs: T0, recent: [] }]],
    ]) {
      expect(() =>
        ProducerState.decode(Buffer.from(JSON.stringify(bad)), RECENT_MAX, EXPIRY_MS),
      ).toThrow(/producer snapshot entry/);
    }
  });
});
