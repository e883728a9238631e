/**
 * Reads Kafka's primitive types from one frame, trusting nothing in it: every length and count is
 * checked against the bytes left before anything is sliced or allocated, varints stop at
 * VARINT32_BYTES_MAX bytes, and every failure is a KafkaDecodeError naming the field and the byte.
 * Byte fields come back as subarrays of the frame (zero-copy): they keep the frame alive.
 */
import { isUtf8 } from 'node:buffer';
import { KafkaDecodeError } from './errors.js';

/** An unsigned 32-bit varint takes at most 5 bytes (7 bits a byte); a longer one is hostile. */
export const VARINT32_BYTES_MAX = 5;

export const UUID_BYTES = 16;

export class WireReader {
  readonly buf: Buffer;
  at: number;
  /** Where reading must stop: the frame's end, or a tagged field's end while reading one. */
  end: number;
  /**
   * The decoded-element budget: how many array elements, across the whole frame, may still be
   * decoded (codec.ts takes each array's count from it before allocating the array), and the
   * budget it started from, for the error. Unbounded unless the caller sets it (decodeRequest).
   */
  elementsLeft = Infinity;
  elementsMax = Infinity;

  constructor(buf: Buffer, at = 0, end = buf.length) {
    this.buf = buf;
    this.at = at;
    this.end = end;
  }

  get remaining(): number {
    return this.end - this.at;
  }

  /** Fails unless `bytes` more bytes are there. */
  need(bytes: number, field: string): void {
    if (bytes > this.end - this.at) {
      throw new KafkaDecodeError(
        'truncated',
        `needs ${bytes} bytes, ${this.end - this.at} left`,
        this.at,
        field,
      );
    }
  }

  int8(field: string): number {
    this.need(1, field);
    return this.buf.readInt8(this.at++);
  }

  int16(field: string): number {
    this.need(2, field);
    const value = this.buf.readInt16BE(this.at);
    this.at += 2;
    return value;
  }

  uint16(field: string): number {
    this.need(2, field);
    const value = this.buf.readUInt16BE(this.at);
    this.at += 2;
    return value;
  }

  int32(field: string): number {
    this.need(4, field);
    const value = this.buf.readInt32BE(this.at);
    this.at += 4;
    return value;
  }

  int64(field: string): bigint {
    this.need(8, field);
    const value = this.buf.readBigInt64BE(this.at);
    this.at += 8;
    return value;
  }

  float64(field: string): number {
    this.need(8, field);
    const value = this.buf.readDoubleBE(this.at);
    this.at += 8;
    return value;
  }

  uvarint(field: string): number {
    const start = this.at;
    let value = 0;
    for (let i = 0; i < VARINT32_BYTES_MAX; i++) {
      if (this.at >= this.end) {
        throw new KafkaDecodeError('truncated', 'varint cut short', start, field);
      }
      const byte = this.buf[this.at++];
      if (i === VARINT32_BYTES_MAX - 1 && byte > 0x0f) break;
      value += (byte & 0x7f) * 2 ** (7 * i);
      if (byte < 0x80) return value;
    }
    throw new KafkaDecodeError(
      'varint',
      `varint longer than 32 bits (${VARINT32_BYTES_MAX} bytes max)`,
      start,
      field,
    );
  }

  /** A length read from the wire, checked against the bytes left: the only way slices are cut. */
  slice(length: number, field: string): Buffer {
    if (length > this.end - this.at) {
      throw new KafkaDecodeError(
        'length',
        `length ${length} exceeds the ${this.end - this.at} bytes left`,
        this.at,
        field,
      );
    }
    const bytes = this.buf.subarray(this.at, this.at + length);
    this.at += length;
    return bytes;
  }

  utf8(length: number, field: string): string {
    const start = this.at;
    const bytes = this.slice(length, field);
    if (!isUtf8(bytes))
      throw new KafkaDecodeError('utf8', 'string is not valid UTF-8', start, field);
    return bytes.toString('utf8');
  }

  uuid(field: string): string {
    const hex = this.slice(UUID_BYTES, field).toString('hex');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  }
}
