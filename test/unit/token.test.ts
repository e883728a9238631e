// Proves the token codec (version 2: collection id → partition → offset) round-trips, stays
// compact and URL-safe, merges by max per (collection, partition), answers a collection only its
// own entries (of its incarnation: a collection written again after a drop has another id, and a
// token of the dropped one is found as such), and refuses (400 invalid_token) anything malformed,
// truncated, non-canonical or from another cluster.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TailbaseError } from '../../shared/errors.js';
import {
  collectionId,
  collectionOffsets,
  droppedIncarnationIn,
  mergeTokenOffsets,
  offsetsOf,
  TokenCodec,
} from '../../shared/token.js';

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

const uint32 = (value: number) => [
  (value >>> 24) & 0xff,
  (value >>> 16) & 0xff,
  (value >>> 8) & 0xff,
  value & 0xff,
];

describe('token codec', () => {
  it('round-trips random maps of collections, partitions and offsets (seeded)', () => {
    const seed = Date.now() % 1_000_000;
    console.log(`token round-trip seed ${seed}`);
    fc.assert(
      fc.property(
        fc.dictionary(
          fc.constantFrom('books', 'users', 'events', 'a', '__tailbase_settings'),
          fc.dictionary(
            fc.integer({ min: 0, max: 15 }).map(String),
            fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
            { minKeys: 1 },
          ),
        ),
        (entries) => {
          const offsets = new Map(
            Object.entries(entries).map(([collection, partitions]) => [
              collectionId(collection),
              new Map(Object.entries(partitions).map(([p, o]) => [Number(p), o])),
            ]),
          );
          const text = codec.encode(offsets);
          expect(text).toMatch(/^[A-Za-z0-9_-]+$/);
          expect(codec.decode(text)).toEqual(offsets);
        },
      ),
      { seed, numRuns: 300 },
    );
  });

  it('is compact: one collection and partition at any offset in 40 characters', () => {
    const one = (partition: number, offset: number) =>
      codec.encode(collectionOffsets('books', new Map([[partition, offset]])));
    expect(one(3, 1_000_000).length).toBeLessThanOrEqual(19);
    expect(one(15, 2 ** 40).length).toBeLessThanOrEqual(27);
    expect(one(15, Number.MAX_SAFE_INTEGER).length).toBeLessThanOrEqual(40);
    expect(codec.encode(new Map()).length).toBe(7);
  });

  it('merges by max per collection and partition', () => {
    const merged = mergeTokenOffsets(
      collectionOffsets(
        'books',
        new Map([
          [0, 5],
          [1, 9],
        ]),
      ),
      collectionOffsets(
        'books',
        new Map([
          [1, 3],
          [2, 7],
        ]),
      ),
      collectionOffsets('users', new Map([[1, 100]])),
    );
    expect(offsetsOf(merged, 'books')).toEqual(
      new Map([
        [0, 5],
        [1, 9],
        [2, 7],
      ]),
    );
    expect(offsetsOf(merged, 'users')).toEqual(new Map([[1, 100]]));
  });

  it('answers a collection its own entries only, and none for one it does not name', () => {
    const token = codec.decode(
      codec.encode(
        mergeTokenOffsets(
          collectionOffsets('books', new Map([[2, 40]])),
          collectionOffsets('users', new Map([[2, 900]])),
        ),
      ),
    );
    expect(offsetsOf(token, 'books')).toEqual(new Map([[2, 40]]));
    expect(offsetsOf(token, 'users')).toEqual(new Map([[2, 900]]));
    expect(offsetsOf(token, 'never-written')).toEqual(new Map());
  });

  it('names each incarnation of a collection by its own id; finds an earlier one a token names', () => {
    // Incarnation 0 keeps the id tokens had before drops existed.
    expect(collectionId('books', 0)).toBe(collectionId('books'));
    const ids = new Set([0, 1, 2, 3].map((k) => collectionId('books', k)));
    expect(ids.size).toBe(4);
    const old = collectionOffsets('books', new Map([[2, 40]]), 0);
    const now = collectionOffsets('books', new Map([[2, 1]]), 1);
    const both = mergeTokenOffsets(old, now);
    expect(offsetsOf(both, 'books', 1)).toEqual(new Map([[2, 1]]));
    expect(offsetsOf(now, 'books', 0)).toEqual(new Map());
    expect(droppedIncarnationIn(both, 'books', 1, 64)).toBe(0);
    expect(droppedIncarnationIn(now, 'books', 1, 64)).toBeUndefined();
    expect(droppedIncarnationIn(old, 'books', 0, 64)).toBeUndefined();
    // A name the log does not hold: any of the first incarnationsCheckedMax is found.
    expect(droppedIncarnationIn(now, 'books', undefined, 64)).toBe(1);
    expect(droppedIncarnationIn(now, 'books', undefined, 1)).toBeUndefined();
    expect(droppedIncarnationIn(now, 'papers', undefined, 64)).toBeUndefined();
    expect(codec.decode(codec.encode(both))).toEqual(both);
  });

  it('refuses a token from another cluster', () => {
    const foreign = new TokenCodec('01JDQ4ZP9V8X2Y3Z4A5B6C7D8F', 16).encode(
      collectionOffsets('books', new Map([[1, 2]])),
    );
    rejects(foreign, 'foreign_cluster');
  });

  it('refuses malformed tokens', () => {
    const good = codec.encode(
      mergeTokenOffsets(
        collectionOffsets(
          'books',
          new Map([
            [1, 300],
            [4, 70_000],
          ]),
        ),
        collectionOffsets('users', new Map([[0, 1]])),
      ),
    );
    rejects('');
    rejects('not a token!');
    rejects('a'.repeat(9000));
    rejects(good.slice(0, 3), 'malformed');
    rejects(good.slice(0, -1));
    const bytes = Buffer.from(good, 'base64url');
    rejects(Buffer.from([1, ...bytes.subarray(1)]).toString('base64url'), 'version');
    const header = [...bytes.subarray(0, 5)];
    const books = uint32(collectionId('books'));
    const users = uint32(collectionId('users'));
    const [low, high] =
      collectionId('books') < collectionId('users') ? [books, users] : [users, books];
    // partitions out of order within a collection, collections out of order, a repeated entry
    rejects(
      Buffer.from([...header, ...books, 4, 1, ...books, 1, 1]).toString('base64url'),
      'malformed',
    );
    rejects(
      Buffer.from([...header, ...high, 0, 1, ...low, 0, 1]).toString('base64url'),
      'malformed',
    );
    rejects(
      Buffer.from([...header, ...books, 1, 1, ...books, 1, 2]).toString('base64url'),
      'malformed',
    );
    // a partition beyond the cluster's, an entry cut inside its collection id, unterminated varints
    rejects(Buffer.from([...header, ...books, 16, 1]).toString('base64url'), 'partition');
    rejects(Buffer.from([...header, ...books.slice(0, 3)]).toString('base64url'), 'malformed');
    rejects(Buffer.from([...header, ...books, 1, 0x80]).toString('base64url'), 'malformed');
    rejects(Buffer.from([...header, ...books, 1, 0x80, 0]).toString('base64url'), 'malformed');
    rejects(
      Buffer.from([...header, ...books, 1, ...new Array(9).fill(0xff), 1]).toString('base64url'),
    );
  });

  it('decodes a token to exactly what was encoded, no more', () => {
    const offsets = collectionOffsets('books', new Map([[0, 0]]));
    expect(codec.decode(codec.encode(offsets))).toEqual(offsets);
  });
});
