// Proves the gateway's marks of views' partitions (gateway/feed-epochs.ts) are bounded and never
// go back: at most `partitionsMax`, the least recently used leaving first; a mark is answered only
// for its own incarnation of the topic; a mark behind the one kept, or of an earlier incarnation
// or log start, changes nothing, and one of a later incarnation or log start replaces it.
import { describe, expect, it } from 'vitest';
import { FeedEpochs } from '../../gateway/feed-epochs.js';

describe('FeedEpochs', () => {
  it('keeps at most partitionsMax marks, the least recently used leaving first', () => {
    const epochs = new FeedEpochs(2);
    epochs.record('a', 0, { incarnation: 0, start: 0, next: 10, epoch: 1 });
    epochs.record('b', 0, { incarnation: 0, start: 0, next: 10, epoch: 1 });
    // Used: `b` is now the least recently used.
    expect(epochs.at('a', 0, 0)).toEqual({ incarnation: 0, start: 0, next: 10, epoch: 1 });
    epochs.record('c', 0, { incarnation: 0, start: 0, next: 10, epoch: 1 });
    expect(epochs.size).toBe(2);
    expect(epochs.at('b', 0, 0)).toBeUndefined();
    expect(epochs.at('a', 0, 0)).toBeDefined();
    expect(epochs.at('c', 0, 0)).toBeDefined();
  });

  it('answers a mark for its own incarnation only, and never moves it back', () => {
    const epochs = new FeedEpochs(8);
    epochs.record('v', 3, { incarnation: 1, start: 0, next: 50, epoch: 7 });
    expect(epochs.at('v', 3, 0)).toBeUndefined();
    expect(epochs.at('v', 2, 1)).toBeUndefined();
    epochs.record('v', 3, { incarnation: 1, start: 0, next: 40, epoch: 5 });
    epochs.record('v', 3, { incarnation: 0, start: 0, next: 90, epoch: 9 });
    expect(epochs.at('v', 3, 1)).toEqual({ incarnation: 1, start: 0, next: 50, epoch: 7 });
    epochs.record('v', 3, { incarnation: 1, start: 0, next: 60, epoch: 8 });
    expect(epochs.at('v', 3, 1)).toEqual({ incarnation: 1, start: 0, next: 60, epoch: 8 });
    epochs.record('v', 3, { incarnation: 2, start: 0, next: 5, epoch: 0 });
    expect(epochs.at('v', 3, 1)).toBeUndefined();
    expect(epochs.at('v', 3, 2)).toEqual({ incarnation: 2, start: 0, next: 5, epoch: 0 });
  });

  it('replaces a mark by one counted from a later log start, even one not as far on', () => {
    const epochs = new FeedEpochs(8);
    epochs.record('v', 0, { incarnation: 0, start: 0, next: 50, epoch: 7 });
    epochs.record('v', 0, { incarnation: 0, start: 30, next: 40, epoch: 5 });
    expect(epochs.at('v', 0, 0)).toEqual({ incarnation: 0, start: 30, next: 40, epoch: 5 });
    epochs.record('v', 0, { incarnation: 0, start: 0, next: 90, epoch: 9 });
    expect(epochs.at('v', 0, 0)).toEqual({ incarnation: 0, start: 30, next: 40, epoch: 5 });
  });
});
