/**
 * A range scan across every partition: one replica per partition scans its share, and the pages
 * are merged in key order (UTF-8 bytes, the serve-nodes' order). A page may only hold keys up to
 * the smallest last key of any node that has more, or a key that node has not sent yet could be
 * skipped; the cursor is the last key returned, and since a key lives in exactly one partition,
 * resuming after it is exact across partitions. A sorted scan (`sort=`) merges the same way in
 * its order (sort values, then key), and its cursor also holds the last item's sort values. A
 * view's cursor also names the version it was read from: a redefinition's swap between two pages
 * would resume in another version's documents, so such a cursor is a 409 `cursor_stale`.
 */
import { badRequest, TailbaseError } from '../shared/errors.js';
import { compareCodePoints as compareKeys } from '../shared/code-points.js';
import type { SortClause } from '../shared/filter/ast.js';
import { compareSortValues } from '../shared/filter/facts.js';
import { collectApplied } from './consistency.js';
import {
  isSortValues,
  type AppliedOffsets,
  type ScanResult,
  type ScannedDocument,
  type SortValues,
} from '../shared/serve-api.js';

export interface NodePage {
  assigned: readonly number[];
  result: ScanResult;
}

/** Where a scan resumes: after this key, and these sort values when it is sorted. */
export interface ScanPosition {
  key: string;
  sort?: SortValues;
  /** A view's scan: the version it read (its definition's offset in the views topic). */
  version?: number;
}

export interface MergedPage {
  items: ScannedDocument[];
  /** The position to resume after, or null when the range is exhausted. */
  after: ScanPosition | null;
  applied: AppliedOffsets;
}

type Order = (a: ScannedDocument, b: ScannedDocument) => number;

const byKey: Order = (a, b) => compareKeys(a.key, b.key);

function scanOrder(sort: readonly SortClause[]): Order {
  if (sort.length === 0) return byKey;
  return (a, b) => {
    for (let i = 0; i < sort.length; i++) {
      const order = compareSortValues(a.sort?.[i] ?? null, b.sort?.[i] ?? null, sort[i].direction);
      if (order !== 0) return order;
    }
    return compareKeys(a.key, b.key);
  };
}

export function mergeScanPages(
  pages: NodePage[],
  limit: number,
  sort: readonly SortClause[] = [],
): MergedPage {
  const order = scanOrder(sort);
  let bound: ScannedDocument | null = null;
  const items: ScannedDocument[] = [];
  const applied: AppliedOffsets = {};
  for (const { assigned, result } of pages) {
    const mine = new Set(assigned);
    items.push(...result.items.filter((item) => mine.has(item.partition)));
    const last = result.items.at(-1);
    if (result.more && last && (bound === null || order(last, bound) < 0)) bound = last;
    collectApplied(applied, result.applied, assigned);
  }
  items.sort(order);
  const within = bound === null ? items : items.filter((item) => order(item, bound!) <= 0);
  const page = within.slice(0, limit);
  const more = bound !== null || within.length > limit;
  const last = page.at(-1) ?? bound;
  const after = more && last ? positionOf(last, sort.length > 0) : null;
  return { items: page, after, applied };
}

const positionOf = (item: ScannedDocument, sorted: boolean): ScanPosition =>
  sorted ? { key: item.key, sort: item.sort ?? [] } : { key: item.key };

/**
 * A cursor is base64url of a version byte and the key's UTF-8 bytes, at most 1 + keyBytesMax
 * bytes. Version 1 was the JSON `[1, key]`, which spends six bytes (`\u0001`) on each control
 * character; it still decodes, so a scan begun before an upgrade can go on.
 */
const CURSOR_VERSION = 2;
const CURSOR_VERSION_JSON = 1;
/** A sorted scan's cursor: base64url of this byte and the JSON `[key, sortValues]`. */
const CURSOR_VERSION_SORTED = 3;
/** A view's scan's cursor: base64url of this byte and the JSON `[version, key, sortValues|null]`. */
const CURSOR_VERSION_VIEW = 4;
/** Bytes of a sorted cursor's JSON: a key and sort values that are document strings, bounded. */
export const SORTED_CURSOR_BYTES_MAX = 16 * 1024;
/** The JSON text `[1,""]` around a version-1 key, which escapes each UTF-8 byte to 6 at most. */
const cursorBytesMax = (keyBytesMax: number) => 6 + 6 * keyBytesMax;
const utf8Strict = new TextDecoder('utf-8', { fatal: true });
/** With the u flag a surrogate pair is one code point, so only lone halves match. */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/** A key a cursor may carry: one this gateway could have issued, never repaired into another. */
const isCursorKey = (key: unknown, keyBytesMax: number): key is string =>
  typeof key === 'string' &&
  key.length > 0 &&
  Buffer.byteLength(key) <= keyBytesMax &&
  !LONE_SURROGATE.test(key);

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
  if (!isCursorKey(key, keyBytesMax)) throw invalid();
  return key;
}

function versionOneKey(parsed: unknown): unknown {
  const valid = Array.isArray(parsed) && parsed.length === 2 && parsed[0] === CURSOR_VERSION_JSON;
  return valid ? parsed[1] : undefined;
}

/** The cursor of a position; of a view's scan when `version` (the view's version read) is set. */
export function encodePosition(position: ScanPosition, version: number | null = null): string {
  if (version !== null) {
    const json = Buffer.from(JSON.stringify([version, position.key, position.sort ?? null]));
    return Buffer.concat([Buffer.of(CURSOR_VERSION_VIEW), json]).toString('base64url');
  }
  if (position.sort === undefined) return encodeCursor(position.key);
  const json = Buffer.from(JSON.stringify([position.key, position.sort]), 'utf8');
  return Buffer.concat([Buffer.of(CURSOR_VERSION_SORTED), json]).toString('base64url');
}

/**
 * 409 `cursor_stale` when the cursor was issued by a scan of another version of the view than
 * the one read now (`version`, null for a collection): a swap came between two pages.
 */
export function checkCursorVersion(
  position: ScanPosition,
  name: string,
  version: number | null,
): void {
  if (position.version === undefined || position.version === version) return;
  throw new TailbaseError(
    409,
    'cursor_stale',
    `${name} was redefined since this cursor was issued: its pages are of another version; ` +
      'scan again from the start',
    { collection: name, cursorVersion: position.version, version },
  );
}

/**
 * The position a cursor resumes after, for a scan with `clauses` sort clauses: a sorted scan's
 * cursor must carry one sort value a clause, an unsorted one none; anything else is a 400.
 */
export function decodePosition(cursor: string, keyBytesMax: number, clauses: number): ScanPosition {
  const invalid = () =>
    badRequest('invalid_cursor', 'cursor is not one this gateway issued for this sort');
  const charsMax = Math.ceil(((1 + SORTED_CURSOR_BYTES_MAX) * 4) / 3);
  if (cursor.length > charsMax || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw invalid();
  const bytes = Buffer.from(cursor, 'base64url');
  if (bytes[0] !== CURSOR_VERSION_SORTED && bytes[0] !== CURSOR_VERSION_VIEW) {
    if (clauses > 0) throw invalid();
    return { key: decodeCursor(cursor, keyBytesMax) };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(utf8Strict.decode(bytes.subarray(1)));
  } catch {
    throw invalid();
  }
  if (!Array.isArray(parsed)) throw invalid();
  const ofView = bytes[0] === CURSOR_VERSION_VIEW;
  if (parsed.length !== (ofView ? 3 : 2)) throw invalid();
  const [version, key, sort] = (ofView ? parsed : [undefined, ...parsed]) as unknown[];
  if (ofView && !Number.isSafeInteger(version)) throw invalid();
  if (!isCursorKey(key, keyBytesMax)) throw invalid();
  const sorted = clauses > 0;
  if (sorted ? !isSortValues(sort) || sort.length !== clauses : !ofView || sort !== null) {
    throw invalid();
  }
  return {
    key,
    ...(sorted ? { sort: sort as SortValues } : {}),
    ...(ofView ? { version: version as number } : {}),
  };
}
