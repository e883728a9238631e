// Proves the keys `.` and `..` are refused as invalid_key, one at a time and in bulk: a URL parser
// folds those path segments (also written %2E or %2e%2E) away, so a document stored under either
// could never be read, written or deleted by key. Keys that only hold dots among other characters
// are still taken.
import { describe, expect, it } from 'vitest';
import { parseBulkInSlices } from '../../gateway/bulk.js';
import { DEFAULT_LIMITS } from '../../gateway/config.js';
import { checkKey } from '../../gateway/validation.js';

const DOT_KEYS = ['.', '..'];
const invalidKey = expect.objectContaining({
  status: 400,
  code: 'invalid_key',
  message: expect.stringMatching(/URL/),
});

describe('checkKey', () => {
  it('refuses exactly the dot-segment keys, saying a URL cannot address them', () => {
    for (const key of DOT_KEYS) {
      expect(() => checkKey(key, DEFAULT_LIMITS.keyBytesMax), key).toThrow(invalidKey);
    }
  });

  it('takes keys that hold dots among other characters', () => {
    for (const key of ['...', '.a', 'a.', '..a', ' .', '.. ', 'a/..', '%2E', '．']) {
      expect(checkKey(key, DEFAULT_LIMITS.keyBytesMax)).toBe(key);
    }
  });
});

describe('parseBulkInSlices', () => {
  it('refuses a dot-segment key in either body form, naming the record', async () => {
    for (const key of DOT_KEYS) {
      const records = [
        { key: 'a', value: { n: 1 } },
        { key, value: null },
      ];
      const bodies: Array<[string, string]> = [
        [JSON.stringify(records), 'application/json'],
        [records.map((r) => JSON.stringify(r)).join('\n'), 'application/x-ndjson'],
      ];
      for (const [body, type] of bodies) {
        await expect(parseBulkInSlices(body, type, DEFAULT_LIMITS, 0), key).rejects.toMatchObject({
          code: 'invalid_key',
          details: { index: 1 },
        });
      }
    }
  });
});
