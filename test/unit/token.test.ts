// Proves the token codec round-trips, stays compact and URL-safe, merges by max, and refuses
// (400 invalid_token) anything malformed, truncated, non-canonical or from another cluster.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TailbaseError } from '../../shared/errors.js';
import { mergeTokenOffsets, TokenCodec } from '../../shared/token.js';

const codec = new TokenCodec('01JDQ4ZP9V8X2Y3Z4A5B6C7D8E', 16);

function rejects(text: string, reason?: string) {
  try {
    codec.decode(text);
  } catch (error) {
    expect(error).toBeInstanceOf(TailbaseError);
    const e = error as TailbaseError;
    expect(e.status).toBe(400);
    expect(e.code).toBe('invalid_token');
    if (reason) expect(e.details.reason).toBe(reason);
    return;
  }
  throw new Error(`token ${text} was accepted`);
}

describe('token codec', () => {
  it('round-trips random offset maps (seeded)', () => {
    const seed = Date.now() % 1_000_000;
    console.log(`token round-trip seed ${seed}`);
    fc.assert(
      fc.property(
        fc.dictionary(
          fc.integer({ min: 0, max: 15 }).map(String),
          fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
        ),
        (entries) => {
          const offsets = new Map(Object.entries(entries).map(([p, o]) => [Number(p), o]));
          const text = codec.encode(offsets);
          expect(text).toMatch(/^[A-Za-z0-9_-]+$/);
          expect(codec.decode(text)).toEqual(offsets);
        },
      ),
      { seed, numRuns: 300 },
    );
  });

  it('is compact: one partition in about 20 characters', () => {
    expect(codec.encode(new Map([[3, 1_000_000]])).length).toBeLessThanOrEqual(12);
    expect(codec.encode(new Map([[15, 2 ** 40]])).length).toBeLessThanOrEqual(20);
    expect(codec.encode(new Map()).length).toBe(7);
  });

  it('merges by max per partition', () => {
    const merged = mergeTokenOffsets(
      new Map([
        [0, 5],
        [1, 9],
      ]),
      new Map([
        [1, 3],
        [2, 7],
      ]),
    );
    expect(merged).toEqual(
      new Map([
        [0, 5],
        [1, 9],
        [2, 7],
      ]),
    );
  });

  it('refuses a token from another cluster', () => {
    const foreign = new TokenCodec('01JDQ4ZP9V8X2Y3Z4A5B6C7D8F', 16).encode(new Map([[1, 2]]));
    rejects(foreign, 'foreign_cluster');
  });

  it('refuses malformed tokens', () => {
    const good = codec.encode(
      new Map([
        [1, 300],
        [4, 70_000],
      ]),
    );
    rejects('');
    rejects('not a token!');
    rejects('a'.repeat(9000));
    rejects(good.slice(0, 3), 'malformed');
    rejects(good.slice(0, -1));
    const bytes = Buffer.from(good, 'base64url');
    rejects(Buffer.from([2, ...bytes.subarray(1)]).toString('base64url'), 'version');
    // partitions out of order, a partition beyond the cluster's, an unterminated varint
    const header = bytes.subarray(0, 5);
    rejects(Buffer.from([...header, 4, 1, 1, 1]).toString('base64url'), 'malformed');
    rejects(Buffer.from([...header, 16, 1]).toString('base64url'), 'partition');
    rejects(Buffer.from([...header, 1, 0x80]).toString('base64url'), 'malformed');
    rejects(Buffer.from([...header, 1, 0x80, 0]).toString('base64url'), 'malformed');
    rejects(Buffer.from([...header, 1, ...new Array(9).fill(0xff), 1]).toString('base64url'));
  });

  it('decodes a token to exactly what was encoded, no more', () => {
    const text = codec.encode(new Map([[0, 0]]));
    expect(codec.decode(text)).toEqual(new Map([[0, 0]]));
  });
});
