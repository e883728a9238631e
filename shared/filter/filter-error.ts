/**
 * The one error the filter language throws: a 400 whose code names the parameter at fault and
 * whose message names the character position, so a person can find the mistake in their text.
 */
import { TailbaseError } from '../errors.js';

export type FilterErrorCode = 'invalid_filter' | 'invalid_sort' | 'invalid_facets';

export class FilterError extends TailbaseError {
  override name = 'FilterError';
  declare readonly code: FilterErrorCode;
  /** 0-based offset in characters (code points, not UTF-16 units) into the parameter's text. */
  readonly position: number;

  constructor(
    code: FilterErrorCode,
    message: string,
    position: number,
    details: Record<string, unknown> = {},
  ) {
    super(400, code, message, { position, ...details });
    this.position = position;
  }
}

/** Where an error at UTF-16 index `index` of `text` is, in the characters a person counts. */
export function characterPosition(text: string, index: number): number {
  let position = 0;
  for (let i = 0; i < index && i < text.length; i++) {
    const unit = text.charCodeAt(i);
    // The second half of a surrogate pair belongs to the character the first half started.
    if (!(unit >= 0xdc00 && unit <= 0xdfff && i > 0 && isHighSurrogate(text.charCodeAt(i - 1)))) {
      position++;
    }
  }
  return position;
}

const isHighSurrogate = (unit: number) => unit >= 0xd800 && unit <= 0xdbff;

/** The UTF-8 length of `text` (a lone surrogate counts as the 3 bytes of its replacement). */
export function utf8Bytes(text: string): number {
  return utf8IndexPast(text, Number.POSITIVE_INFINITY).bytes;
}

/**
 * The UTF-16 index of the first character that takes `text` past `bytesMax` UTF-8 bytes, or -1
 * when it fits; and the bytes counted up to there.
 */
export function utf8IndexPast(text: string, bytesMax: number): { index: number; bytes: number } {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    let width = unit < 0x80 ? 1 : unit < 0x800 ? 2 : 3;
    const start = i;
    if (isHighSurrogate(unit) && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        width = 4;
        i++;
      }
    }
    if (bytes + width > bytesMax) return { index: start, bytes };
    bytes += width;
  }
  return { index: -1, bytes };
}
