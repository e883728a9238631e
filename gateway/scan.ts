/**
 * A range scan across every partition: one replica per partition scans its share, and the pages
 * are merged in key order (UTF-8 bytes, the serve-nodes' order). A page may only hold keys up to
 * the smallest last key of any node that has more, or a key that node has not sent yet could be
 * skipped; the cursor is the last key returned, and since a key lives in exactly one partition,
 * resuming after it is exact across partitions.
 */
import { badRequest } from '../shared/errors.js';
import { collectApplied } from './consistency.js';
import type { AppliedOffsets, ScanResult, ServedDocument } from '../shared/serve-client.js';

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

const CURSOR_VERSION = 1;

export function encodeCursor(after: string): string {
  return Buffer.from(JSON.stringify([CURSOR_VERSION, after])).toString('base64url');
}

export function decodeCursor(cursor: string, keyBytesMax: number): string {
  const invalid = () => badRequest('invalid_cursor', 'cursor is not one this gateway issued');
  if (cursor.length > 4 * keyBytesMax + 64 || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw invalid();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw invalid();
  }
  if (
    !Array.isArray(parsed) ||
    parsed.length !== 2 ||
    parsed[0] !== CURSOR_VERSION ||
    typeof parsed[1] !== 'string' ||
    parsed[1].length === 0
  ) {
    throw invalid();
  }
  return parsed[1];
}
