// Proves the typed client's token merge (client/sdk/session-token.ts, browser-safe) agrees with
// the gateway's codec: merging two encoded tokens gives exactly the encoding of
// mergeTokenOffsets of both, for random tokens (offsets up to 2^53); a token of another cluster
// or one it cannot read replaces the session's instead.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { mergeTokens } from '../../client/sdk/session-token.js';
import { mergeTokenOffsets, TokenCodec, type TokenOffsets } from '../../shared/token.js';

const PARTITIONS = 64;
const codec = new TokenCodec('01JDQ4ZP9V8X2Y3Z4A5B6C7D8E', PARTITIONS);

const offsets = fc
  .array(
    fc.tuple(
      fc.constantFrom(0, 1, 0x7fffffff, 0xffffffff, 12345),
      fc.integer({ min: 0, max: PARTITIONS - 1 }),
      fc.oneof(
        fc.integer({ min: 0, max: 300 }),
        fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
      ),
    ),
    { maxLength: 20 },
  )
  .map((entries) => {
    const token = new Map<number, Map<number, number>>();
    for (const [id, partition, offset] of entries) {
      if (!token.has(id)) token.set(id, new Map());
      (token.get(id) as Map<number, number>).set(partition, offset);
    }
    return token as TokenOffsets;
  });

describe('client token merge', () => {
  it('equals the codec of mergeTokenOffsets', () => {
    fc.assert(
      fc.property(offsets, offsets, (a, b) => {
        const merged = mergeTokens(codec.encode(a), codec.encode(b));
        expect(merged).toBe(codec.encode(mergeTokenOffsets(a, b)));
        expect(codec.decode(merged)).toEqual(mergeTokenOffsets(a, b));
      }),
      { numRuns: 500 },
    );
  });

  it('takes the newer token whole when the two cannot merge', () => {
    const ours = codec.encode(new Map([[1, new Map([[0, 5]])]]));
    const foreign = new TokenCodec('another-cluster', PARTITIONS).encode(new Map());
    expect(mergeTokens(ours, foreign)).toBe(foreign);
    expect(mergeTokens('not a token!', ours)).toBe(ours);
    expect(mergeTokens(undefined, ours)).toBe(ours);
  });
});
