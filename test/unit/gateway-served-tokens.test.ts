/** A read's token kept between reads is always the one built afresh for the offsets it was served at. */
import { describe, expect, it } from 'vitest';
import { servedToken, type ReadPlan } from '../../gateway/consistency.js';
import { ServedTokens } from '../../gateway/served-tokens.js';
import type { AppliedOffsets } from '../../shared/serve-api.js';
import { collectionOffsets, TokenCodec } from '../../shared/token.js';

const codec = new TokenCodec('cluster-a', 8);

function planOf(token: ReadPlan['token'], incarnation = 0): ReadPlan {
  return {
    topic: 'books',
    version: null,
    token,
    incarnation,
    waitFor: {},
    settingsWaitFor: undefined,
    waitMs: 0,
    bound: { waitMs: 0, startedMs: 0, slackMs: 0 },
  };
}

describe('ServedTokens', () => {
  it('answers what servedToken encodes, whatever moved between two reads', () => {
    const tokens = new ServedTokens(codec);
    const reads: Array<[ReadPlan, AppliedOffsets, number[]]> = [
      [planOf(new Map()), { 3: 5, 4: 1 }, [3]],
      [planOf(new Map()), { 3: 5, 4: 9 }, [3]],
      [planOf(new Map()), { 3: 6, 4: 9 }, [3]],
      [planOf(new Map()), { 3: 6 }, [3, 4]],
      [planOf(new Map()), { 3: 6, 4: 2 }, [3, 4]],
      [planOf(new Map()), { 3: 6, 4: 3 }, [3, 4]],
      [planOf(new Map()), { 4: 3 }, [3, 4]],
      [planOf(new Map(), 2), { 4: 3 }, [3, 4]],
      [planOf(new Map()), { 3: 0 }, [3]],
      [planOf(new Map()), {}, [3]],
      [planOf(collectionOffsets('books', new Map([[3, 40]]))), { 3: 7 }, [3]],
      [planOf(new Map()), { 3: 7 }, [3]],
    ];
    for (const [plan, applied, partitions] of reads) {
      const expected = codec.encode(servedToken(plan, 'books', applied, partitions));
      expect(tokens.text(plan, 'books', applied, partitions)).toBe(expected);
      expect(tokens.text(plan, 'books', applied, partitions)).toBe(expected);
      expect(tokens.text(plan, 'films', applied, partitions)).toBe(
        codec.encode(servedToken(plan, 'films', applied, partitions)),
      );
    }
  });
});
