// Proves the call batcher groups the calls of one event-loop turn, keeps at most inFlightMax
// batches out and batchMax items per batch, answers each call with its own answer, and fails
// every call of a batch whose send fails.
import { describe, expect, it } from 'vitest';
import { CallBatcher } from '../../shared/call-batcher.js';

function recorder(inFlightMax: number, batchMax: number) {
  const sent: number[][] = [];
  let inFlight = 0;
  let inFlightPeak = 0;
  const batcher = new CallBatcher<number, number>({
    batchMax,
    inFlightMax,
    send: async (items) => {
      sent.push(items);
      inFlight += 1;
      inFlightPeak = Math.max(inFlightPeak, inFlight);
      await new Promise((resolve) => setTimeout(resolve, 5));
      inFlight -= 1;
      if (items.includes(-1)) throw new Error('refused');
      return items.map((item) => item * 10);
    },
  });
  return { batcher, sent, peak: () => inFlightPeak };
}

describe('CallBatcher', () => {
  it('sends the calls of one turn as one batch and answers each with its own answer', async () => {
    const { batcher, sent } = recorder(2, 100);
    const answers = await Promise.all([1, 2, 3].map((n) => batcher.call(n)));
    expect(answers).toEqual([10, 20, 30]);
    expect(sent).toEqual([[1, 2, 3]]);
  });

  it('bounds batches by batchMax and in-flight batches by inFlightMax', async () => {
    const { batcher, sent, peak } = recorder(2, 4);
    const items = Array.from({ length: 20 }, (_, i) => i);
    const answers = await Promise.all(items.map((n) => batcher.call(n)));
    expect(answers).toEqual(items.map((n) => n * 10));
    expect(sent.flat()).toEqual(items);
    expect(Math.max(...sent.map((batch) => batch.length))).toBe(4);
    expect(peak()).toBe(2);
  });

  it('ends a batch before the item that would pass batchWeightMax, never sending an empty one', async () => {
    const sent: number[][] = [];
    const batcher = new CallBatcher<number, number>({
      batchMax: 100,
      inFlightMax: 10,
      batchWeightMax: 10,
      weigh: (item) => item,
      send: async (items) => {
        sent.push(items);
        return items;
      },
    });
    await Promise.all([4, 5, 2, 12, 3, 3, 3, 3].map((n) => batcher.call(n)));
    expect(sent).toEqual([[4, 5], [2], [12], [3, 3, 3], [3]]);
  });

  it('collects what arrives while batches are out into the next batch', async () => {
    const { batcher, sent } = recorder(1, 100);
    const first = batcher.call(1);
    await new Promise((resolve) => setImmediate(resolve));
    const later = [2, 3, 4].map((n) => batcher.call(n));
    await Promise.all([first, ...later]);
    expect(sent).toEqual([[1], [2, 3, 4]]);
  });

  it('fails every call of a failed batch, and later batches still go', async () => {
    const { batcher } = recorder(1, 100);
    const failed = [5, -1].map((n) => batcher.call(n).catch((error: Error) => error.message));
    expect(await Promise.all(failed)).toEqual(['refused', 'refused']);
    expect(await batcher.call(7)).toBe(70);
  });
});
