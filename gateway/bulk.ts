/**
 * Parses a bulk body, NDJSON lines or one JSON array of `{key, value}` (`value: null` deletes),
 * and checks every record before any is written: a bad record rejects the whole request.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { assert } from '../shared/assert.js';
import type { LogRecord } from '../shared/batch-codec.js';
import { badRequest, TailbaseError, tooLarge } from '../shared/errors.js';
import type { GatewayLimits } from './config.js';
import { checkDocument, checkKey, isPlainObject, parseJson } from './validation.js';

/** Names the failing record in the error a client sees. */
function locate(error: unknown, where: Record<string, number>): unknown {
  if (!(error instanceof TailbaseError)) return error;
  return new TailbaseError(error.status, error.code, error.message, { ...error.details, ...where });
}

function tooMany(limits: GatewayLimits, actual: number) {
  return tooLarge('too_many_records', `bulk holds more than bulkRecordsMax records`, {
    limit: 'bulkRecordsMax',
    max: limits.bulkRecordsMax,
    actual,
  });
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

/** JSON's whitespace (RFC 8259 §2): JSON.parse refuses a byte order mark or a no-break space. */
function isJsonSpace(code: number): boolean {
  return code === 0x20 || code === 0x0a || code === 0x0d || code === 0x09;
}

/** The index of the first character at or after `from` that is not JSON whitespace. */
function skipJsonSpace(text: string, from: number): number {
  let i = from;
  while (isJsonSpace(text.charCodeAt(i))) i++;
  return i;
}

/** The index of the quote closing the string opened at `open`, or the text's length. */
function stringEnd(text: string, open: number): number {
  let i = open + 1;
  while (i < text.length) {
    const code = text.charCodeAt(i);
    if (code === QUOTE) return i;
    i += code === BACKSLASH ? 2 : 1;
  }
  return text.length;
}

/**
 * How many elements the JSON array starting `text` holds, counted in one pass that builds
 * nothing: JSON.parse of 16 MB of `{},` blocks the event loop for seconds and holds ~500 MB before
 * its length can be refused. Undefined when the text does not start with `[`. Exact for valid
 * JSON; for any other text the count only decides whether it is refused as too many records,
 * and JSON.parse answers everything else as it always did.
 */
function arrayLength(text: string): number | undefined {
  let i = skipJsonSpace(text, 0);
  if (text.charCodeAt(i) !== OPEN_ARRAY) return undefined;
  i = skipJsonSpace(text, i + 1);
  if (text.charCodeAt(i) === CLOSE_ARRAY) return 0;
  let depth = 1;
  let commas = 0;
  for (; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === QUOTE) {
      i = stringEnd(text, i);
    } else if (code === OPEN_ARRAY || code === OPEN_OBJECT) {
      depth++;
    } else if (code === CLOSE_ARRAY || code === CLOSE_OBJECT) {
      if (--depth === 0) break;
    } else if (code === COMMA && depth === 1) {
      commas++;
    }
  }
  return commas + 1;
}

/**
 * A JSON array body's elements: one JSON.parse, refused first on its count (arrayLength), so a
 * body over bulkRecordsMax is never parsed.
 */
function arrayEntries(text: string, limits: GatewayLimits): unknown[] {
  const length = arrayLength(text);
  if (length !== undefined && length > limits.bulkRecordsMax) throw tooMany(limits, length);
  const parsed = parseJson(text, 'bulk body');
  if (!Array.isArray(parsed)) throw badRequest('invalid_bulk', 'a JSON bulk body is an array');
  assert(parsed.length === length, `bulk array counted ${length}, parsed ${parsed.length}`);
  return parsed;
}

/**
 * An NDJSON body's records, a line parsed a step, so a caller can give the event loop a turn
 * between two: a 4 MB body of 5,000 lines held the HTTP thread ~300 ms of CPU in one turn (and a
 * key read behind it up to 0.8 s on the loaded 2-core machine).
 */
function* lineEntries(text: string, limits: GatewayLimits): Generator<void, unknown[]> {
  // Line by line with indexOf: splitting 16 MB of newlines first builds an array of 16 million
  // strings to find there is nothing in them.
  const entries: unknown[] = [];
  for (let start = 0, line = 1; start <= text.length; line++) {
    const newline = text.indexOf('\n', start);
    const end = newline < 0 ? text.length : newline;
    const content = text.slice(start, end).trim();
    start = end + 1;
    if (content === '') continue;
    if (entries.length === limits.bulkRecordsMax) throw tooMany(limits, entries.length + 1);
    try {
      entries.push(parseJson(content, `line ${line}`));
    } catch (error) {
      throw locate(error, { line });
    }
    yield;
  }
  return entries;
}

/** A media type without its parameters, lower-cased: it is case-insensitive (RFC 9110 §8.3.1). */
function mediaType(contentType: string | undefined): string {
  const type = contentType ?? '';
  const semicolon = type.indexOf(';');
  return (semicolon < 0 ? type : type.slice(0, semicolon)).trim().toLowerCase();
}

function checkRecord(
  entry: unknown,
  index: number,
  limits: GatewayLimits,
  nowMs: number,
): LogRecord {
  try {
    if (!isPlainObject(entry) || !('key' in entry) || !('value' in entry)) {
      throw badRequest('invalid_record', 'each record is an object {key, value}');
    }
    const key = checkKey(entry.key, limits.keyBytesMax);
    if (entry.value === null) return { key, value: null, timestampMs: nowMs };
    const value = Buffer.from(
      JSON.stringify(checkDocument(entry.value, 'value', limits.documentDepthMax)),
    );
    if (value.length > limits.documentBytesMax) {
      throw tooLarge('document_too_large', 'a record value exceeds documentBytesMax', {
        limit: 'documentBytesMax',
        max: limits.documentBytesMax,
        actual: value.length,
      });
    }
    return { key, value, timestampMs: nowMs };
  } catch (error) {
    throw locate(error, { index });
  }
}

/**
 * The parse as steps: every element parsed first (so a body's count and syntax are refused
 * before any record is looked at), then every record checked; it pauses after each NDJSON line
 * and each record, and returns the records.
 */
function* parsing(
  text: string,
  contentType: string | undefined,
  limits: GatewayLimits,
  nowMs: number,
): Generator<void, LogRecord[]> {
  // application/json is a JSON array; NDJSON, or a body of no JSON type that is not an array, is
  // one record a line.
  const type = mediaType(contentType);
  const ndjson =
    type.includes('ndjson') || (!type.includes('json') && !text.trimStart().startsWith('['));
  const parsed = ndjson ? yield* lineEntries(text, limits) : arrayEntries(text, limits);
  if (parsed.length === 0) throw badRequest('empty_bulk', 'a bulk request holds no records');
  const records: LogRecord[] = [];
  for (let index = 0; index < parsed.length; index++) {
    records.push(checkRecord(parsed[index], index, limits, nowMs));
    yield;
  }
  return records;
}

/**
 * Parses and checks a bulk body on the HTTP thread: whenever the parse has run
 * `limits.bulkParseSliceMsMax`, the event loop takes a turn (reads that came meanwhile are
 * answered, due timers fire), so no read waits behind a whole NDJSON body. A JSON array body is
 * still one `JSON.parse`, which reads wait behind whole; only its records' checks are sliced.
 */
export async function parseBulkInSlices(
  text: string,
  contentType: string | undefined,
  limits: GatewayLimits,
  nowMs: number,
): Promise<LogRecord[]> {
  const steps = parsing(text, contentType, limits, nowMs);
  let sliceStartedMs = performance.now();
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    if (performance.now() - sliceStartedMs < limits.bulkParseSliceMsMax) continue;
    await nextTurn();
    sliceStartedMs = performance.now();
  }
}
