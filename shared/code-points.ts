/** Comparing strings as their UTF-8 bytes compare, which JavaScript's `<` does not. */

/**
 * UTF-8 byte order, as LMDB keys and SQLite's BINARY collation sort, without encoding either
 * string: it is code point order, which UTF-16 order matches except that surrogate pairs (code points above
 * U+FFFF) must sort after U+E000..U+FFFF. Merges sort with it, so it must not allocate.
 */
export function compareCodePoints(a: string, b: string): number {
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
