/**
 * Parses a bulk body, NDJSON lines or one JSON array of `{key, value}` (`value: null` deletes),
 * and checks every record before any is written: a bad record rejects the whole request.
 */
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

function entries(text: string, ndjson: boolean, limits: GatewayLimits): unknown[] {
  if (!ndjson) {
    const parsed = parseJson(text, 'bulk body');
    if (!Array.isArray(parsed)) throw badRequest('invalid_bulk', 'a JSON bulk body is an array');
    if (parsed.length > limits.bulkRecordsMax) throw tooMany(limits, parsed.length);
    return parsed;
  }
  const lines = text.split('\n');
  const records: unknown[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (line === '') continue;
    if (records.length === limits.bulkRecordsMax) throw tooMany(limits, records.length + 1);
    try {
      records.push(parseJson(line, `line ${i + 1}`));
    } catch (error) {
      throw locate(error, { line: i + 1 });
    }
  }
  return records;
}

export function parseBulk(
  text: string,
  contentType: string | undefined,
  collection: string,
  limits: GatewayLimits,
  nowMs: number,
): LogRecord[] {
  // application/json is a JSON array; NDJSON, or a body of no JSON type that is not an array, is
  // one record a line.
  const type = contentType ?? '';
  const ndjson =
    type.includes('ndjson') || (!type.includes('json') && !text.trimStart().startsWith('['));
  const parsed = entries(text, ndjson, limits);
  if (parsed.length === 0) throw badRequest('empty_bulk', 'a bulk request holds no records');
  return parsed.map((entry, index) => {
    try {
      if (!isPlainObject(entry) || !('key' in entry) || !('value' in entry)) {
        throw badRequest('invalid_record', 'each record is an object {key, value}');
      }
      const key = checkKey(entry.key, limits.keyBytesMax);
      if (entry.value === null) return { collection, key, value: null, timestampMs: nowMs };
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
      return { collection, key, value, timestampMs: nowMs };
    } catch (error) {
      throw locate(error, { index });
    }
  });
}
