/**
 * A range scan across every partition: one replica per partition scans its share, and the pages
 * are merged in key order (UTF-8 bytes, the serve-nodes' order). A page may only hold keys up to
 * the smallest last key of any node that has more, or a key that node has not sent yet could be
 * skipped; the cursor is the last key returned, and since a key lives in exactly one partition,
 * resuming after it is exact across partitions.
 */
import { badRequest } from '../shared/errors.js';
import { collectApplied } from './consistency.js';
import type { AppliedOffsets, ScanResult, ServedDocument } from '../shared/serve-api.js';

export interface NodePage {
  assigned: readonly number[];
  result: ScanResult;
}

export interface MergedPage {
  items: ServedDocument[];
  /** The key to resume after, or null when the range is exhausted. */
  after: string | null;
  applied: AppliedOffsets;
}

/**
 * UTF-8 byte order, as the serve-nodes' LMDB keys sort, without encoding either string: it is
 * code point order, which UTF-16 order matches except that surrogate pairs (code points above
 * U+FFFF) must sort after U+E000..U+FFFF. Merges sort with it, so it must not allocate.
 */
export function compareKeys(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    const xSurrogate = x >= 0xd800 && x <= 0xdfff;
    const ySurrogate = y >= 0xd800 && y <= 0xdfff;
    if (xSurrogate !== ySurrogate) return xSurrogate ? 1 : -1;
    return x - y;
  }
  return a.length - b.length;
}

export function mergeScanPages(pages: NodePage[], limit: number): MergedPage {
  let bound: string | null = null;
  const items: ServedDocument[] = [];
  const applied: AppliedOffsets = {};
  for (const { assigned, result } of pages) {
    const mine = new Set(assigned);
    items.push(...result.items.filter((item) => mine.has(item.partition)));
    const last = result.items.at(-1);
    if (result.more && last && (bound === null || compareKeys(last.key, bound) < 0)) {
      bound = last.key;
    }
    collectApplied(applied, result.applied, assigned);
  }
  items.sort((a, b) => compareKeys(a.key, b.key));
  const within = bound === null ? items : items.filter((i) => compareKeys(i.key, bound!) <= 0);
  const page = within.slice(0, limit);
  const more = bound !== null || within.length > limit;
  const after = more ? (page.at(-1)?.key ?? bound) : null;
  return { items: page, after, applied };
}

/**
 * A cursor is base64url of a version byte and the key's UTF-8 bytes, at most 1 + keyBytesMax
 * bytes. Version 1 was the JSON `[1, key]`, which spends six bytes (`\u0001`) on each control
 * character; it still decodes, so a scan begun before an upgrade can go on.
 */
const CURSOR_VERSION = 2;
const CURSOR_VERSION_JSON = 1;
/** The JSON text `[1,""]` around a version-1 key, which escapes each UTF-8 byte to 6 at most. */
const cursorBytesMax = (keyBytesMax: number) => 6 + 6 * keyBytesMax;
const utf8Strict = new TextDecoder('utf-8', { fatal: true });
/** With the u flag a surrogate pair is one code point, so only lone halves match. */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

export function encodeCursor(after: string): string {
  const key = Buffer.from(after, 'utf8');
  return Buffer.concat([Buffer.of(CURSOR_VERSION), key]).toString('base64url');
}

/**
 * The key a cursor resumes after. Anything this gateway could not have issued is a 400
 * `invalid_cursor`: a key over keyBytesMax or not well-formed UTF-8 is refused here, not
 * repaired into another key or passed on for a serve-node to refuse in its own terms.
 */
export function decodeCursor(cursor: string, keyBytesMax: number): string {
  const invalid = () => badRequest('invalid_cursor', 'cursor is not one this gateway issued');
  const charsMax = Math.ceil((cursorBytesMax(keyBytesMax) * 4) / 3);
  if (cursor.length > charsMax || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw invalid();
  const bytes = Buffer.from(cursor, 'base64url');
  let key: unknown;
  try {
    key =
      bytes[0] === CURSOR_VERSION
        ? utf8Strict.decode(bytes.subarray(1))
        : versionOneKey(JSON.parse(utf8Strict.decode(bytes)));
  } catch {
    throw invalid();
  }
  if (
    typeof key !== 'string' ||
    key.length === 0 ||
    Buffer.byteLength(key) > keyBytesMax ||
    LONE_SURROGATE.test(key)
  ) {
    throw invalid();
  }
  return key;
}

function versionOneKey(parsed: unknown): unknown {
  const valid = Array.isArray(parsed) && parsed.length === 2 && parsed[0] === CURSOR_VERSION_JSON;
  return valid ? parsed[1] : undefined;
}
