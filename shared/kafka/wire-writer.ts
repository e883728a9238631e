/**
 * Writes Kafka's primitive types into a growing buffer. Byte fields of ENCODE_REFERENCE_BYTES_MIN
 * or more (record batches, mostly) are not copied: the writer closes its current segment and
 * keeps a reference to them, so a Fetch answer can go to the socket as chunks (writev) with its
 * record batches never copied, or be joined into one Buffer when that is what the caller wants.
 */
import { UUID_BYTES } from './wire-reader.js';

/** Byte fields at least this long are referenced rather than copied into the output. */
export const ENCODE_REFERENCE_BYTES_MIN = 16 * 1024;

const SEGMENT_BYTES_INITIAL = 512;

export class WireWriter {
  private readonly done: Buffer[] = [];
  private doneBytes = 0;
  private buf: Buffer;
  private at = 0;

  constructor(initialBytes = SEGMENT_BYTES_INITIAL) {
    this.buf = Buffer.allocUnsafe(initialBytes);
  }

  get length(): number {
    return this.doneBytes + this.at;
  }

  private ensure(bytes: number): void {
    if (this.at + bytes <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.at + bytes));
    this.buf.copy(grown, 0, 0, this.at);
    this.buf = grown;
  }

  int8(value: number): void {
    this.ensure(1);
    this.buf.writeInt8(value, this.at++);
  }

  int16(value: number): void {
    this.ensure(2);
    this.at = this.buf.writeInt16BE(value, this.at);
  }

  uint16(value: number): void {
    this.ensure(2);
    this.at = this.buf.writeUInt16BE(value, this.at);
  }

  int32(value: number): void {
    this.ensure(4);
    this.at = this.buf.writeInt32BE(value, this.at);
  }

  int64(value: bigint): void {
    this.ensure(8);
    this.at = this.buf.writeBigInt64BE(value, this.at);
  }

  float64(value: number): void {
    this.ensure(8);
    this.at = this.buf.writeDoubleBE(value, this.at);
  }

  uvarint(value: number): void {
    this.ensure(5);
    while (value >= 0x80) {
      this.buf[this.at++] = (value & 0x7f) | 0x80;
      value = Math.floor(value / 128);
    }
    this.buf[this.at++] = value;
  }

  utf8(value: string, byteLength: number): void {
    this.ensure(byteLength);
    this.at += this.buf.write(value, this.at, 'utf8');
  }

  uuid(hex: string): void {
    this.ensure(UUID_BYTES);
    this.at += this.buf.write(hex, this.at, 'hex');
  }

  bytes(value: Buffer): void {
    if (value.length < ENCODE_REFERENCE_BYTES_MIN) {
      this.ensure(value.length);
      this.at += value.copy(this.buf, this.at);
      return;
    }
    this.closeSegment();
    this.done.push(value);
    this.doneBytes += value.length;
  }

  private closeSegment(): void {
    if (this.at === 0) return;
    this.done.push(this.buf.subarray(0, this.at));
    this.doneBytes += this.at;
    this.buf = this.buf.subarray(this.at);
    this.at = 0;
    if (this.buf.length < SEGMENT_BYTES_INITIAL)
      this.buf = Buffer.allocUnsafe(SEGMENT_BYTES_INITIAL);
  }

  /**
   * The chunks of a frame that began with a reserved int32 (its size), now patched to the bytes
   * that follow it. Referenced byte fields are chunks of their own.
   */
  frameChunks(): Buffer[] {
    const chunks = this.chunks();
    chunks[0].writeInt32BE(this.doneBytes - 4, 0);
    return chunks;
  }

  /** What was written, in the chunks it is held in. */
  chunks(): Buffer[] {
    this.closeSegment();
    return this.done;
  }
}
