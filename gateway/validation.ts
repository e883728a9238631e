/**
 * Checks on everything a client sends, before anything reaches the log: names, keys, numbers,
 * bodies (size first, then strict UTF-8, then JSON). Each failure is a 4xx with a code.
 */
import type { Context } from 'hono';
import { integerParam } from '../shared/query-params.js';
import { badRequest, tooLarge } from '../shared/errors.js';
import { readBodyBytes } from '../shared/http-body.js';

const utf8Strict = new TextDecoder('utf-8', { fatal: true });
/** With the u flag a surrogate pair is one code point, so only lone halves match. */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

export function checkKey(key: unknown, keyBytesMax: number): string {
  if (typeof key !== 'string') throw badRequest('invalid_key', 'key must be a string');
  const bytes = Buffer.byteLength(key);
  if (bytes < 1 || bytes > keyBytesMax || LONE_SURROGATE.test(key)) {
    throw badRequest('invalid_key', `key must be 1..${keyBytesMax} bytes of UTF-8`, {
      limit: 'keyBytesMax',
      max: keyBytesMax,
      actual: bytes,
    });
  }
  // A URL parser folds the path segments `.` and `..` (also written %2E) before routing, so a
  // document stored under either could never be read, written or deleted by key.
  if (key === '.' || key === '..') {
    throw badRequest('invalid_key', `key may not be "${key}": a URL path cannot address it`);
  }
  return key;
}

/** Percent-decodes a path segment strictly: bytes that are not UTF-8 are refused, not replaced. */
export function decodeSegment(raw: string, what: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw badRequest('invalid_utf8', `${what} is not percent-encoded UTF-8`);
  }
}

/** The raw (still percent-encoded) path segments: hono keeps undecodable ones verbatim. */
export function rawPathSegments(url: string): string[] {
  const start = url.indexOf('/', url.indexOf('//') + 2);
  const end = url.search(/[?#]/);
  return url.slice(start, end < 0 ? undefined : end).split('/');
}

/** Query parameters, decoded strictly; a repeated name keeps its first value. */
export function strictQuery(url: string): Map<string, string> {
  const params = new Map<string, string>();
  const at = url.indexOf('?');
  if (at < 0) return params;
  const hash = url.indexOf('#', at);
  for (const pair of url.slice(at + 1, hash < 0 ? undefined : hash).split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const name = decodeSegment((eq < 0 ? pair : pair.slice(0, eq)).replace(/\+/g, ' '), 'query');
    const value = eq < 0 ? '' : decodeSegment(pair.slice(eq + 1).replace(/\+/g, ' '), 'query');
    if (!params.has(name)) params.set(name, value);
  }
  return params;
}

export function intParam(
  query: Map<string, string>,
  name: string,
  min: number,
  max: number,
  fallback: number,
): number {
  return integerParam(query.get(name), name, min, max, fallback);
}

export function enumParam<T extends string>(
  query: Map<string, string>,
  name: string,
  allowed: readonly T[],
): T | undefined {
  const text = query.get(name);
  if (text === undefined || text === '') return undefined;
  if (!allowed.includes(text as T)) {
    throw badRequest('invalid_parameter', `${name} must be one of ${allowed.join(', ')}`, {
      parameter: name,
    });
  }
  return text as T;
}

/** Reads a request body up to `bytesMax`, stopping as soon as it is exceeded (413 `code`). */
export function readBody(
  c: Context,
  bytesMax: number,
  limit: string,
  code: string,
): Promise<Uint8Array> {
  return readBodyBytes(c, bytesMax, (actual) =>
    tooLarge(code, `body exceeds ${limit} (${bytesMax} bytes)`, {
      limit,
      max: bytesMax,
      ...(actual === undefined ? {} : { actual }),
    }),
  );
}

export function decodeUtf8(bytes: Uint8Array, what: string): string {
  try {
    return utf8Strict.decode(bytes);
  } catch {
    throw badRequest('invalid_utf8', `${what} is not valid UTF-8`);
  }
}

/** A leading UTF-8 byte order mark is not part of a JSON text (RFC 8259 §8.1): it is not stored. */
export function withoutBom(bytes: Uint8Array): Uint8Array {
  const bom = bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf;
  return bom ? bytes.subarray(3) : bytes;
}

export function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw badRequest('invalid_json', `${what} is not valid JSON: ${(cause as Error).message}`);
  }
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A document is a JSON object nested at most `depthMax` levels (the object itself is level 1)
 * whose strings and names are well-formed Unicode (no lone surrogates) and whose numbers are
 * doubles. Walked without recursion, so no nesting a client sends can exhaust the stack.
 */
export function checkDocument(
  value: unknown,
  what: string,
  depthMax: number,
): Record<string, unknown> {
  if (!isPlainObject(value)) throw badRequest('invalid_document', `${what} must be a JSON object`);
  const checkText = (text: string) => {
    if (LONE_SURROGATE.test(text)) {
      throw badRequest('invalid_utf8', `${what} holds a string with a lone surrogate`);
    }
  };
  const pending: Array<{ value: unknown; depth: number }> = [{ value, depth: 1 }];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const { value: item, depth } = next;
    if (typeof item === 'string') checkText(item);
    // JSON.parse reads a number past the double range as ±Infinity, which reads back as null.
    if (typeof item === 'number' && !Number.isFinite(item)) {
      throw badRequest('invalid_number', `${what} holds a number beyond the double range`);
    }
    if (typeof item !== 'object' || item === null) continue;
    if (depth > depthMax) {
      throw badRequest('document_too_deep', `${what} nests deeper than ${depthMax} levels`, {
        limit: 'documentDepthMax',
        max: depthMax,
      });
    }
    // One push at a time: spreading a wide object's members into push() overflows the stack.
    if (Array.isArray(item)) {
      for (const child of item) pending.push({ value: child, depth: depth + 1 });
      continue;
    }
    const members = item as Record<string, unknown>;
    for (const name of Object.keys(members)) {
      checkText(name);
      pending.push({ value: members[name], depth: depth + 1 });
    }
  }
  return value;
}
