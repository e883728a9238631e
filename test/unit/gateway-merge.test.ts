// Proves the scatter-gather merges: scan pages merge in UTF-8 key order, never pass a node that
// has more, and a cursor walk over replicas that overlap returns every key exactly once;
// search hits merge by score; cursors round-trip and foreign ones are refused.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  checkCursorVersion,
  decodeCursor,
  decodePosition,
  encodeCursor,
  encodePosition,
  mergeScanPages,
} from '../../gateway/scan.js';
import { compareCodePoints as compareKeys } from '../../shared/code-points.js';
import { mergeSearchHits } from '../../gateway/search.js';
import type { ScanResult, ServedDocument } from '../../shared/serve-api.js';

const doc = (key: string, partition: number): ServedDocument => ({
  key,
  json: '{}',
  offset: 0,
  partition,
});

/** A fake node's scan over an in-memory sorted key set, as the serve-node contract defines it. */
function nodeScan(docs: ServedDocument[], after: string | null, limit: number): ScanResult {
  const sorted = [...docs].sort((a, b) => compareKeys(a.key, b.key));
  const rest = after === null ? sorted : sorted.filter((d) => compareKeys(d.key, after) > 0);
  return { items: rest.slice(0, limit), more: rest.length > limit, applied: {} };
}

describe('scan merge', () => {
  it('orders by UTF-8 bytes, not UTF-16 code units', () => {
    expect(compareKeys('\uffff', '😀')).toBeLessThan(0);
    expect('\uffff' < '😀').toBe(false);
  });

  it('walks every key once across nodes whose partitions overlap (seeded)', () => {
    const seed = Date.now() % 100000;
    console.log(`scan merge seed ${seed}`);
    let state = seed;
    const random = () => (state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const all = Array.from({ length: 200 }, (_, i) =>
      doc(`k${Math.floor(random() * 1e6)}-${i}`, i % 4),
    );
    // node A hosts 0,1,2 and node B hosts 1,2,3: A is assigned 0,1 and B 2,3
    const a = all.filter((d) => d.partition <= 2);
    const b = all.filter((d) => d.partition >= 1);
    const seen: string[] = [];
    let after: string | null = null;
    for (let round = 0; round < 500; round++) {
      const limit = 1 + Math.floor(random() * 9);
      const page = mergeScanPages(
        [
          { assigned: [0, 1], result: nodeScan(a, after, limit) },
          { assigned: [2, 3], result: nodeScan(b, after, limit) },
        ],
        limit,
      );
      expect(page.items.length).toBeLessThanOrEqual(limit);
      seen.push(...page.items.map((i) => i.key));
      if (page.after === null) break;
      after = page.after.key;
    }
    expect(seen).toEqual(all.map((d) => d.key).sort((x, y) => compareKeys(x, y)));
  });

  it('round-trips cursors and refuses foreign ones', () => {
    expect(decodeCursor(encodeCursor('ключ/1'), 1024)).toBe('ключ/1');
    for (const bad of ['', '!!', Buffer.from('[2,"a"]').toString('base64url'), 'e30']) {
      expect(() => decodeCursor(bad, 1024)).toThrow(/cursor/);
    }
  });

  it("a view's cursor names the version it read: a scan of another version refuses it (409)", () => {
    const unsorted = decodePosition(encodePosition({ key: 'k' }, 7), 1024, 0);
    expect(unsorted).toEqual({ key: 'k', version: 7 });
    const sorted = decodePosition(encodePosition({ key: 'k', sort: [3] }, 7), 1024, 1);
    expect(sorted).toEqual({ key: 'k', sort: [3], version: 7 });
    expect(() => decodePosition(encodePosition({ key: 'k' }, 7), 1024, 1)).toThrow(/cursor/);
    expect(() => decodePosition(encodePosition({ key: 'k', sort: [3] }, 7), 1024, 0)).toThrow(
      /cursor/,
    );
    const forged = Buffer.from([4, ...Buffer.from('["7","k",null]')]).toString('base64url');
    expect(() => decodePosition(forged, 1024, 0)).toThrow(/cursor/);
    expect(() => checkCursorVersion(unsorted, 'v', 7)).not.toThrow();
    for (const now of [8, null]) {
      expect(() => checkCursorVersion(unsorted, 'v', now)).toThrow(
        expect.objectContaining({ status: 409, code: 'cursor_stale' }),
      );
    }
    // A collection's cursor names no version, whatever is read now.
    expect(() => checkCursorVersion({ key: 'k' }, 'v', 8)).not.toThrow();
  });

  it('round-trips cursors for keys of keyBytesMax bytes whatever their characters', () => {
    // JSON writes a control character as \u00XX, six bytes for one byte of key.
    for (const key of ['\x01'.repeat(1024), '\u{1F600}'.repeat(256), '\x1f"\\'.repeat(341) + 'x']) {
      expect(Buffer.byteLength(key)).toBe(1024);
      expect(decodeCursor(encodeCursor(key), 1024)).toBe(key);
    }
  });

  it('decodes version-1 cursors, which were JSON [1, key]', () => {
    const v1 = (key: string) => Buffer.from(JSON.stringify([1, key])).toString('base64url');
    for (const key of ['ключ/1', '\x01'.repeat(1024), '.']) {
      expect(decodeCursor(v1(key), 1024)).toBe(key);
    }
  });

  it('refuses crafted cursors whose key is too long or not well-formed UTF-8', () => {
    const v1 = (json: string) => Buffer.from(json).toString('base64url');
    const crafted = [
      encodeCursor('a'.repeat(1025)),
      encodeCursor('\u{1F600}'.repeat(256) + 'a'),
      v1(JSON.stringify([1, 'a'.repeat(1025)])),
      v1('[1,"\\ud800"]'),
      v1('[1,"a\\udc00b"]'),
      Buffer.from([0x5b, 0x31, 0x2c, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x5d]).toString('base64url'),
      Buffer.from([0x02, 0x61, 0xed, 0xa0, 0x80]).toString('base64url'),
      Buffer.from([0x02, 0xff]).toString('base64url'),
      Buffer.from([0x02]).toString('base64url'),
    ];
    for (const cursor of crafted) {
      expect(() => decodeCursor(cursor, 1024), cursor.slice(0, 40)).toThrow(
        expect.objectContaining({ status: 400, code: 'invalid_cursor' }),
      );
    }
  });
});

describe('search merge', () => {
  it('merges by score, ties by partition then offset, and pages after merging', () => {
    const hit = (key: string, score: number, partition: number, offset = 0) => ({
      ...doc(key, partition),
      offset,
      score,
    });
    const merged = mergeSearchHits(
      [
        {
          assigned: [0],
          result: {
            hits: [hit('a', 5, 0), hit('c', 1, 0)],
            total: 2,
            totalExact: true,
            applied: { '0': 3 },
          },
        },
        {
          assigned: [1],
          result: {
            hits: [hit('d', 3, 1, 4), hit('b', 3, 1, 7), hit('x', 9, 2)],
            total: 2,
            totalExact: true,
            applied: { '1': 7 },
          },
        },
      ],
      1,
      2,
    );
    expect(merged.hits.map((h) => h.key)).toEqual(['d', 'b']);
    expect(merged.total).toBe(4);
    expect(merged.applied).toEqual({ '0': 3, '1': 7 });
  });
});

// Proves compareKeys, which encodes nothing, orders every pair of keys as their UTF-8 bytes do.
describe('compareKeys', () => {
  it('agrees with Buffer.compare of the UTF-8 bytes', () => {
    const chars = ['a', 'z', 'é', '\u07ff', '\u0800', '\ud7ff', '\ue000', '\uffff', '😀', '𐀀'];
    const key = fc.array(fc.constantFrom(...chars), { maxLength: 5 }).map((c) => c.join(''));
    fc.assert(
      fc.property(key, key, (a, b) => {
        const bytes = Math.sign(Buffer.compare(Buffer.from(a), Buffer.from(b)));
        expect(Math.sign(compareKeys(a, b))).toBe(bytes);
      }),
      { numRuns: 2000 },
    );
  });
});
