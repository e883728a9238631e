/**
 * The filter's tokens, read one at a time as the parser asks, so the first mistake in the text is
 * the one reported. Words are Meilisearch's: letters, digits, `_`, `-` and `.`; keywords are
 * words in upper case; anything else must be quoted.
 */
import { FilterError, characterPosition } from './filter-error.js';

export type TokenKind =
  'word' | 'string' | '(' | ')' | '[' | ']' | ',' | '=' | '!=' | '>' | '>=' | '<' | '<=' | 'end';

export interface Token {
  kind: TokenKind;
  /** A word as written; a string with its quotes removed and its escapes read. */
  text: string;
  /** UTF-16 index of the token's first character in the filter. */
  start: number;
}

export const KEYWORDS = new Set(['AND', 'OR', 'NOT', 'IN', 'TO', 'EXISTS', 'IS', 'NULL', 'EMPTY']);
/** Keywords of Meilisearch's language we do not implement: reserved, so they are never values. */
export const UNSUPPORTED_KEYWORDS = new Set(['CONTAINS', 'STARTS', 'WITH']);

const WORD = /[\p{Alphabetic}\p{N}_.-]+/uy;
const WHOLE_WORD = /^[\p{Alphabetic}\p{N}_.-]+$/u;
const isWhitespace = (c: string) => c === ' ' || c === '\t' || c === '\n' || c === '\r';
const SINGLE_CHARACTER_TOKENS = new Set(['(', ')', '[', ']', ',', '=']);
const SIMPLE_ESCAPES: Record<string, string> = {
  '\\': '\\',
  "'": "'",
  '"': '"',
  n: '\n',
  t: '\t',
  r: '\r',
};
const CODE_POINT_MAX = 0x10ffff;

export const isWordText = (text: string): boolean => WHOLE_WORD.test(text);

export const isKeyword = (text: string): boolean =>
  KEYWORDS.has(text) || UNSUPPORTED_KEYWORDS.has(text);

export class Lexer {
  private index = 0;
  private peeked: Token | null = null;

  constructor(readonly text: string) {}

  peek(): Token {
    this.peeked ??= this.read();
    return this.peeked;
  }

  next(): Token {
    const token = this.peek();
    this.peeked = null;
    return token;
  }

  /** A FilterError at UTF-16 index `index`, its message ending with the character position. */
  error(index: number, message: string, details: Record<string, unknown> = {}): FilterError {
    const position = characterPosition(this.text, index);
    return new FilterError(
      'invalid_filter',
      `${message} at position ${position}`,
      position,
      details,
    );
  }

  private read(): Token {
    const text = this.text;
    while (this.index < text.length && isWhitespace(text[this.index])) this.index++;
    const start = this.index;
    if (start >= text.length) return { kind: 'end', text: '', start };
    const c = text[start];
    if (SINGLE_CHARACTER_TOKENS.has(c)) {
      this.index++;
      return { kind: c as TokenKind, text: c, start };
    }
    if (c === '<' || c === '>' || c === '!') {
      const withEquals = text[start + 1] === '=';
      if (c === '!' && !withEquals) throw this.error(start, 'expected "=" after "!"');
      this.index += withEquals ? 2 : 1;
      const op = (withEquals ? `${c}=` : c) as TokenKind;
      return { kind: op, text: op, start };
    }
    if (c === '"' || c === "'") return this.readString(c);
    WORD.lastIndex = start;
    const word = WORD.exec(text);
    if (word !== null) {
      this.index = start + word[0].length;
      return { kind: 'word', text: word[0], start };
    }
    if (c === '\0') throw this.error(start, 'a NUL character is not allowed');
    const character = String.fromCodePoint(text.codePointAt(start) ?? 0);
    throw this.error(
      start,
      `unexpected character ${JSON.stringify(character)} (quote values that hold it)`,
    );
  }

  private readString(quote: string): Token {
    const text = this.text;
    const start = this.index;
    let value = '';
    let i = start + 1;
    for (;;) {
      if (i >= text.length) {
        throw this.error(start, `expected a closing ${quote} for the string that starts`);
      }
      const c = text[i];
      if (c === quote) break;
      if (c === '\0') throw this.error(i, 'a NUL character is not allowed');
      if (c !== '\\') {
        value += c;
        i++;
        continue;
      }
      const escaped = this.readEscape(i);
      value += escaped.value;
      i = escaped.end;
    }
    this.index = i + 1;
    return { kind: 'string', text: value, start };
  }

  /** The escape sequence whose backslash is at `at`: `\\ \' \" \n \t \r` or `\u{1F600}`. */
  private readEscape(at: number): { value: string; end: number } {
    const text = this.text;
    const c = text[at + 1];
    if (c !== undefined && Object.hasOwn(SIMPLE_ESCAPES, c)) {
      return { value: SIMPLE_ESCAPES[c], end: at + 2 };
    }
    if (c === 'u' && text[at + 2] === '{') {
      const close = text.indexOf('}', at + 3);
      const hex = close < 0 ? '' : text.slice(at + 3, close);
      const codePoint = /^[0-9a-fA-F]{1,6}$/.test(hex) ? parseInt(hex, 16) : -1;
      const isSurrogate = codePoint >= 0xd800 && codePoint <= 0xdfff;
      if (codePoint > 0 && codePoint <= CODE_POINT_MAX && !isSurrogate) {
        return { value: String.fromCodePoint(codePoint), end: close + 1 };
      }
      throw this.error(at, 'expected a code point from \\u{1} to \\u{10FFFF}, not a surrogate,');
    }
    throw this.error(at, 'expected an escape (\\\\, \\\', \\", \\n, \\t, \\r or \\u{...})');
  }
}
