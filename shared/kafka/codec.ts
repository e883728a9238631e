/**
 * The one encoder and decoder: they walk a compiled plan (plan.ts) and know no message. Classic
 * versions write lengths and counts as int16/int32 (−1 for null); flexible versions write them as
 * unsigned varints of length + 1 (0 for null) and end every struct with a tagged-fields section.
 *
 * Decoding fills every declared field, present in the version or not (its default then), in
 * declaration order, so objects of one struct share one shape and a handler never asks which
 * version it got. Encoding takes the default for any field the body leaves out, and writes a
 * tagged field only when its value is not the default, as Kafka does.
 */
import { KafkaDecodeError, KafkaEncodeError } from './errors.js';
import { Op, type Plan, type Step } from './plan.js';
import type { WireReader } from './wire-reader.js';
import { WireWriter } from './wire-writer.js';

export type Body = Record<string, unknown>;

const CLASSIC_STRING_BYTES_MAX = 0x7fff;

/**
 * The default budget of array elements one request may decode to, across its whole body (nested
 * arrays included). The bytes-left check lets a 2-byte element through, so without it a 64 MiB
 * frame of flexible Metadata topics decodes into 33 million objects; Kafka's own requests stay
 * far below it (a Produce or Fetch names topics × partitions). decodeRequest takes another per
 * call (`elementsMax`).
 */
export const REQUEST_ELEMENTS_MAX = 100_000;

export function decodeStruct(reader: WireReader, plan: Plan): Body {
  const out: Body = {};
  for (const step of plan.steps) {
    out[step.key] = step.present && step.tag < 0 ? decodeField(reader, step) : defaultValue(step);
  }
  if (plan.flexible) decodeTaggedFields(reader, plan, out);
  return out;
}

function decodeField(reader: WireReader, step: Step): unknown {
  if (!step.array) return decodeValue(reader, step);
  const at = reader.at;
  const count = step.compact ? reader.uvarint(step.path) - 1 : reader.int32(step.path);
  if (count < 0) {
    if (count === -1 && step.nullable) return null;
    throw new KafkaDecodeError(
      'length',
      `array count ${count} where no null is allowed`,
      at,
      step.path,
    );
  }
  if (count * step.elementBytesMin > reader.remaining) {
    throw new KafkaDecodeError(
      'length',
      `array count ${count} cannot fit in the ${reader.remaining} bytes left`,
      at,
      step.path,
    );
  }
  // The decoded-element budget, taken before the array is allocated.
  if (count > reader.elementsLeft) {
    const limit =
      reader.elementsMax === REQUEST_ELEMENTS_MAX
        ? `REQUEST_ELEMENTS_MAX (${REQUEST_ELEMENTS_MAX})`
        : `elementsMax (${reader.elementsMax})`;
    throw new KafkaDecodeError(
      'elements',
      `array count ${count} exceeds the ${reader.elementsLeft} array elements left of the ` +
        `request's budget, ${limit}`,
      at,
      step.path,
    );
  }
  reader.elementsLeft -= count;
  const items = new Array<unknown>(count);
  for (let i = 0; i < count; i++) items[i] = decodeValue(reader, step);
  return items;
}

function decodeValue(reader: WireReader, step: Step): unknown {
  switch (step.op) {
    case Op.Bool:
      return reader.int8(step.path) !== 0;
    case Op.Int8:
      return reader.int8(step.path);
    case Op.Int16:
      return reader.int16(step.path);
    case Op.Uint16:
      return reader.uint16(step.path);
    case Op.Int32:
      return reader.int32(step.path);
    case Op.Int64:
      return reader.int64(step.path);
    case Op.Float64:
      return reader.float64(step.path);
    case Op.Uuid:
      return reader.uuid(step.path);
    case Op.String: {
      const length = readLength(reader, step, false);
      return length < 0 ? null : reader.utf8(length, step.path);
    }
    case Op.Bytes:
    case Op.Records: {
      const length = readLength(reader, step, true);
      return length < 0 ? null : reader.slice(length, step.path);
    }
    case Op.Struct:
      return decodeStruct(reader, step.struct!);
  }
}

/** A string's or bytes' length; −1 for null, which only a nullable field may be. */
function readLength(reader: WireReader, step: Step, wide: boolean): number {
  const at = reader.at;
  const length = step.compact
    ? reader.uvarint(step.path) - 1
    : wide
      ? reader.int32(step.path)
      : reader.int16(step.path);
  if (length >= 0 || (length === -1 && (step.nullable || step.op === Op.Records))) return length;
  throw new KafkaDecodeError('length', `length ${length} where no null is allowed`, at, step.path);
}

function decodeTaggedFields(reader: WireReader, plan: Plan, out: Body): void {
  const at = reader.at;
  const count = reader.uvarint(`${plan.name}.taggedFields`);
  // A tagged field takes at least 2 bytes (its tag and its size).
  if (count * 2 > reader.remaining) {
    throw new KafkaDecodeError(
      'length',
      `${count} tagged fields cannot fit in the ${reader.remaining} bytes left`,
      at,
      `${plan.name}.taggedFields`,
    );
  }
  for (let i = 0; i < count; i++) {
    const tag = reader.uvarint(`${plan.name}.taggedFields`);
    const size = reader.uvarint(`${plan.name}.taggedFields`);
    const start = reader.at;
    reader.need(size, `${plan.name}.taggedFields[${tag}]`);
    const step = plan.tagged.find((candidate) => candidate.tag === tag);
    if (!step) {
      // A tag this version does not know: Kafka skips it, so a newer peer can add fields.
      reader.at += size;
      continue;
    }
    const end = reader.end;
    reader.end = start + size;
    out[step.key] = decodeField(reader, step);
    if (reader.at !== reader.end) {
      throw new KafkaDecodeError(
        'length',
        `tagged field is ${size} bytes but its value is not`,
        start,
        step.path,
      );
    }
    reader.end = end;
  }
}

/** A field's default as a fresh value (arrays and structs are never shared between bodies). */
export function defaultValue(step: Step): unknown {
  if (step.array) return step.nullable && step.scalarDefault === null ? null : [];
  if (step.op === Op.Struct) return defaultStruct(step.struct!);
  return step.scalarDefault;
}

function defaultStruct(plan: Plan): Body {
  const out: Body = {};
  for (const step of plan.steps) out[step.key] = defaultValue(step);
  return out;
}

export function encodeStruct(writer: WireWriter, plan: Plan, body: Body): void {
  for (const step of plan.wire) encodeField(writer, step, body[step.key]);
  if (plan.flexible) encodeTaggedFields(writer, plan, body);
}

function encodeField(writer: WireWriter, step: Step, given: unknown): void {
  const value = given === undefined ? defaultValue(step) : given;
  if (!step.array) {
    encodeValue(writer, step, value);
    return;
  }
  if (value === null) {
    if (!step.nullable) throw new KafkaEncodeError(step.path, 'null where no null is allowed');
    if (step.compact) writer.uvarint(0);
    else writer.int32(-1);
    return;
  }
  if (!Array.isArray(value)) throw new KafkaEncodeError(step.path, 'not an array');
  if (step.compact) writer.uvarint(value.length + 1);
  else writer.int32(value.length);
  for (const item of value) encodeValue(writer, step, item);
}

function encodeValue(writer: WireWriter, step: Step, value: unknown): void {
  switch (step.op) {
    case Op.Bool:
      if (typeof value !== 'boolean') throw notA(step, 'boolean');
      writer.int8(value ? 1 : 0);
      return;
    case Op.Int8:
      writer.int8(integer(step, value, -0x80, 0x7f));
      return;
    case Op.Int16:
      writer.int16(integer(step, value, -0x8000, 0x7fff));
      return;
    case Op.Uint16:
      writer.uint16(integer(step, value, 0, 0xffff));
      return;
    case Op.Int32:
      writer.int32(integer(step, value, -0x80000000, 0x7fffffff));
      return;
    case Op.Int64:
      writer.int64(int64(step, value));
      return;
    case Op.Float64:
      if (typeof value !== 'number') throw notA(step, 'number');
      writer.float64(value);
      return;
    case Op.Uuid:
      if (typeof value !== 'string' || !UUID_PATTERN.test(value)) throw notA(step, 'uuid string');
      writer.uuid(value.replaceAll('-', ''));
      return;
    case Op.String:
      encodeString(writer, step, value);
      return;
    case Op.Bytes:
    case Op.Records:
      encodeBytes(writer, step, value);
      return;
    case Op.Struct:
      if (typeof value !== 'object' || value === null) throw notA(step, 'object');
      encodeStruct(writer, step.struct!, value as Body);
      return;
  }
}

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function encodeString(writer: WireWriter, step: Step, value: unknown): void {
  if (value === null) {
    writeNull(writer, step, false);
    return;
  }
  if (typeof value !== 'string') throw notA(step, 'string');
  const byteLength = Buffer.byteLength(value, 'utf8');
  if (step.compact) {
    writer.uvarint(byteLength + 1);
  } else {
    if (byteLength > CLASSIC_STRING_BYTES_MAX) {
      throw new KafkaEncodeError(
        step.path,
        `${byteLength} bytes exceed int16 lengths (${CLASSIC_STRING_BYTES_MAX})`,
      );
    }
    writer.int16(byteLength);
  }
  writer.utf8(value, byteLength);
}

function encodeBytes(writer: WireWriter, step: Step, value: unknown): void {
  if (value === null) {
    writeNull(writer, step, true);
    return;
  }
  if (!Buffer.isBuffer(value)) throw notA(step, 'Buffer');
  if (step.compact) writer.uvarint(value.length + 1);
  else writer.int32(value.length);
  writer.bytes(value);
}

function writeNull(writer: WireWriter, step: Step, wide: boolean): void {
  if (!step.nullable && step.op !== Op.Records) {
    throw new KafkaEncodeError(step.path, 'null where no null is allowed');
  }
  if (step.compact) writer.uvarint(0);
  else if (wide) writer.int32(-1);
  else writer.int16(-1);
}

function encodeTaggedFields(writer: WireWriter, plan: Plan, body: Body): void {
  const written = plan.tagged.filter((step) => !isDefault(step, body[step.key]));
  writer.uvarint(written.length);
  for (const step of written) {
    const value = new WireWriter(64);
    encodeField(value, step, body[step.key]);
    const chunks = value.chunks();
    writer.uvarint(step.tag);
    writer.uvarint(chunks.reduce((sum, chunk) => sum + chunk.length, 0));
    for (const chunk of chunks) writer.bytes(chunk);
  }
}

/** Whether a value is its field's default (a tagged field then stays off the wire). */
function isDefault(step: Step, value: unknown): boolean {
  if (value === undefined) return true;
  if (step.array) return Array.isArray(value) ? value.length === 0 : step.scalarDefault === value;
  if (step.op === Op.Struct) {
    if (typeof value !== 'object' || value === null) return false;
    return step.struct!.steps.every((inner) => isDefault(inner, (value as Body)[inner.key]));
  }
  if (step.op === Op.Int64) return int64(step, value) === step.scalarDefault;
  if (Buffer.isBuffer(value)) return value.length === 0 && step.op === Op.Bytes;
  return value === step.scalarDefault;
}

function integer(step: Step, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new KafkaEncodeError(step.path, `${String(value)} is not an integer in ${min}..${max}`);
  }
  return value;
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** int64 values are bigints; a safe-integer number is taken too, for handlers' convenience. */
function int64(step: Step, value: unknown): bigint {
  const big =
    typeof value === 'bigint'
      ? value
      : Number.isSafeInteger(value)
        ? BigInt(value as number)
        : null;
  if (big === null || big < INT64_MIN || big > INT64_MAX) {
    throw new KafkaEncodeError(step.path, `${String(value)} is not an int64 (bigint)`);
  }
  return big;
}

function notA(step: Step, what: string): KafkaEncodeError {
  return new KafkaEncodeError(step.path, `not a ${what}`);
}
