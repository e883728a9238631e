/**
 * Fixed-width text that sorts as the numbers it encodes, for LMDB keys: a double's bits with the
 * sign flipped (positives) or all bits flipped (negatives), as 16 hex digits.
 */
const view = new DataView(new ArrayBuffer(8));
const SIGN = 1n << 63n;
const ALL = (1n << 64n) - 1n;

export function sortableNumber(x: number): string {
  view.setFloat64(0, x === 0 ? 0 : x);
  const bits = view.getBigUint64(0);
  return ((bits & SIGN) === 0n ? bits | SIGN : ~bits & ALL).toString(16).padStart(16, '0');
}
