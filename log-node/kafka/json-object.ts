/**
 * Whether a byte range is one JSON object in UTF-8 (RFC 8259), decided in place: what
 * `JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes))` accepts as an object,
 * a leading byte order mark included, without decoding a string or building the document. The
 * Produce handler asks it of every record value; decoding and parsing each one was the largest
 * part of the log-node's time a produced record (profiled), for a document it only looks at.
 */

const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;

/** The containers open at each depth: 1 an object, 0 an array. Grown, never shrunk. */
let stack = new Uint8Array(64);

export function isJsonObject(buf: Uint8Array, start: number, end: number): boolean {
  let i = start;
  // TextDecoder drops a leading byte order mark before JSON.parse sees the text.
  if (end - i >= 3 && buf[i] === 0xef && buf[i + 1] === 0xbb && buf[i + 2] === 0xbf) i += 3;
  i = skipSpace(buf, i, end);
  if (i >= end || buf[i] !== OPEN_OBJECT) return false;
  let depth = 0;
  value: for (;;) {
    i = skipSpace(buf, i, end);
    if (i >= end) return false;
    const c = buf[i];
    if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (depth === stack.length) {
        const larger = new Uint8Array(stack.length * 2);
        larger.set(stack);
        stack = larger;
      }
      const isObject = c === OPEN_OBJECT;
      stack[depth++] = isObject ? 1 : 0;
      i = skipSpace(buf, i + 1, end);
      if (i < end && buf[i] === (isObject ? CLOSE_OBJECT : CLOSE_ARRAY)) {
        depth--;
        i++;
      } else if (isObject) {
        i = memberKey(buf, i, end);
        if (i < 0) return false;
        continue value;
      } else {
        continue value;
      }
    } else if (c === QUOTE) {
      i = stringEnd(buf, i, end);
    } else if (c === MINUS || (c >= 0x30 && c <= 0x39)) {
      i = numberEnd(buf, i, end);
    } else if (c === 0x74) {
      i = literalEnd(buf, i, end, 'true');
    } else if (c === 0x66) {
      i = literalEnd(buf, i, end, 'false');
    } else if (c === 0x6e) {
      i = literalEnd(buf, i, end, 'null');
    } else {
      return false;
    }
    if (i < 0) return false;
    // After a value: the next member or element, or the end of containers.
    for (;;) {
      if (depth === 0) return skipSpace(buf, i, end) === end;
      i = skipSpace(buf, i, end);
      if (i >= end) return false;
      const inObject = stack[depth - 1] === 1;
      if (buf[i] === COMMA) {
        i = inObject ? memberKey(buf, skipSpace(buf, i + 1, end), end) : i + 1;
        if (i < 0) return false;
        continue value;
      }
      if (buf[i] !== (inObject ? CLOSE_OBJECT : CLOSE_ARRAY)) return false;
      depth--;
      i++;
    }
  }
}

function skipSpace(buf: Uint8Array, at: number, end: number): number {
  let i = at;
  while (i < end) {
    const c = buf[i];
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) break;
    i++;
  }
  return i;
}

/** `"key"` and its colon at `at`; where the member's value may start, or −1. */
function memberKey(buf: Uint8Array, at: number, end: number): number {
  if (at >= end || buf[at] !== QUOTE) return -1;
  const i = skipSpace(buf, stringEnd(buf, at, end), end);
  return i > 0 && i < end && buf[i] === COLON ? i + 1 : -1;
}

/** 1 for the bytes a string holds as they are: printable ASCII but the quote and backslash. */
const PLAIN = new Uint8Array(256);
for (let c = 0x20; c < 0x80; c++) PLAIN[c] = c === QUOTE || c === BACKSLASH ? 0 : 1;

/** The string at `at` (its opening quote): the index after its closing quote, or −1. */
function stringEnd(buf: Uint8Array, at: number, end: number): number {
  let i = at + 1;
  while (i < end) {
    // One table load a byte through the run of plain ones, nearly all of a document's text.
    while (i < end && PLAIN[buf[i]] === 1) i++;
    if (i >= end) return -1;
    const c = buf[i];
    if (c === QUOTE) return i + 1;
    if (c < 0x20) return -1;
    if (c === BACKSLASH) {
      if (i + 1 >= end) return -1;
      const escaped = buf[i + 1];
      if (escaped === 0x75) {
        if (i + 6 > end) return -1;
        for (let h = i + 2; h < i + 6; h++) if (!isHex(buf[h])) return -1;
        i += 6;
      } else if (
        escaped === QUOTE ||
        escaped === BACKSLASH ||
        escaped === 0x2f ||
        escaped === 0x62 ||
        escaped === 0x66 ||
        escaped === 0x6e ||
        escaped === 0x72 ||
        escaped === 0x74
      ) {
        i += 2;
      } else {
        return -1;
      }
    } else if (c < 0x80) {
      i++;
    } else {
      i = utf8SequenceEnd(buf, i, end);
      if (i < 0) return -1;
    }
  }
  return -1;
}

/** One well-formed UTF-8 sequence of 2-4 bytes at `at` (Unicode's table 3-7), or −1. */
function utf8SequenceEnd(buf: Uint8Array, at: number, end: number): number {
  const lead = buf[at];
  let continuations: number;
  let low = 0x80;
  let high = 0xbf;
  if (lead >= 0xc2 && lead <= 0xdf) continuations = 1;
  else if (lead >= 0xe0 && lead <= 0xef) {
    continuations = 2;
    if (lead === 0xe0) low = 0xa0;
    if (lead === 0xed) high = 0x9f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    continuations = 3;
    if (lead === 0xf0) low = 0x90;
    if (lead === 0xf4) high = 0x8f;
  } else return -1;
  if (at + continuations >= end) return -1;
  const second = buf[at + 1];
  if (second < low || second > high) return -1;
  for (let i = at + 2; i <= at + continuations; i++) {
    if (buf[i] < 0x80 || buf[i] > 0xbf) return -1;
  }
  return at + continuations + 1;
}

function isHex(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

/** -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? at `at`: the index after it, or −1. */
function numberEnd(buf: Uint8Array, at: number, end: number): number {
  let i = at;
  if (buf[i] === MINUS) i++;
  if (i >= end || !isDigit(buf[i])) return -1;
  if (buf[i] === 0x30) i++;
  else while (i < end && isDigit(buf[i])) i++;
  if (i < end && buf[i] === DOT) {
    i++;
    if (i >= end || !isDigit(buf[i])) return -1;
    while (i < end && isDigit(buf[i])) i++;
  }
  if (i < end && (buf[i] === 0x65 || buf[i] === 0x45)) {
    i++;
    if (i < end && (buf[i] === PLUS || buf[i] === MINUS)) i++;
    if (i >= end || !isDigit(buf[i])) return -1;
    while (i < end && isDigit(buf[i])) i++;
  }
  return i;
}

function literalEnd(buf: Uint8Array, at: number, end: number, literal: string): number {
  if (at + literal.length > end) return -1;
  for (let k = 0; k < literal.length; k++) {
    if (buf[at + k] !== literal.charCodeAt(k)) return -1;
  }
  return at + literal.length;
}
