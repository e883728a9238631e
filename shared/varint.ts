/**
 * Kafka's signed varints (zigzag, then unsigned LEB128), as RecordBatch v2 records use them for
 * lengths (varint, 32-bit) and timestamp deltas (varlong, 64-bit). Arithmetic rather than bit
 * operations, so values whose zigzag form is a safe integer (|v| < 2^52) survive; readers never
 * trust a length and never read past `end`.
 */

/** The most bytes a 32-bit varint takes; a longer one is malformed. */
export const VARINT_BYTES_MAX = 5;
/** The most bytes a 64-bit varlong takes. */
export const VARLONG_BYTES_MAX = 10;

function zigzag(value: number): number {
  return value >= 0 ? value * 2 : -value * 2 - 1;
}

/** Bytes the zigzag varint of `value` takes. */
export function varintBytes(value: number): number {
  let rest = zigzag(value);
  let bytes = 1;
  while (rest >= 0x80) {
    rest = Math.floor(rest / 0x80);
    bytes++;
  }
  return bytes;
}

/** Writes the zigzag varint of `value` at `at`; returns the position after it. */
export function writeVarint(buf: Buffer, value: number, at: number): number {
  let rest = zigzag(value);
  let next = at;
  while (rest >= 0x80) {
    buf[next++] = (rest % 0x80) | 0x80;
    rest = Math.floor(rest / 0x80);
  }
  buf[next++] = rest;
  return next;
}

function read(
  buf: Uint8Array,
  at: number,
  end: number,
  bytesMax: number,
): { value: number; next: number } | null {
  let unsigned = 0;
  let scale = 1;
  for (let i = 0; i < bytesMax; i++) {
    if (at + i >= end) return null;
    const byte = buf[at + i];
    unsigned += (byte & 0x7f) * scale;
    if (byte < 0x80) {
      if (!Number.isSafeInteger(unsigned)) return null;
      const value = unsigned % 2 === 0 ? unsigned / 2 : -(unsigned + 1) / 2;
      return { value, next: at + i + 1 };
    }
    scale *= 0x80;
  }
  return null;
}

/** A 32-bit zigzag varint at `at`, or null when it is cut short by `end` or malformed. */
export function readVarint(
  buf: Uint8Array,
  at: number,
  end = buf.length,
): { value: number; next: number } | null {
  const result = read(buf, at, end, VARINT_BYTES_MAX);
  if (result === null || result.value > 0x7fff_ffff || result.value < -0x8000_0000) return null;
  return result;
}

/** A 64-bit zigzag varlong at `at`; null when cut short, malformed or beyond ±2^52. */
export function readVarlong(
  buf: Uint8Array,
  at: number,
  end = buf.length,
): { value: number; next: number } | null {
  return read(buf, at, end, VARLONG_BYTES_MAX);
}

/**
 * Reads varints in place, as readVarint and readVarlong do but with no object a read: each read
 * returns the value, NaN where those return null, and leaves where it ended in `next`. The walks
 * of every record of every batch read several varints a record.
 */
export class VarintCursor {
  next = 0;

  constructor(private readonly buf: Uint8Array) {}

  /** readVarint at `at`. */
  varint(at: number, end: number): number {
    const value = this.read(at, end, VARINT_BYTES_MAX);
    return value > 0x7fff_ffff || value < -0x8000_0000 ? NaN : value;
  }

  /** readVarlong at `at`. */
  varlong(at: number, end: number): number {
    return this.read(at, end, VARLONG_BYTES_MAX);
  }

  private read(at: number, end: number, bytesMax: number): number {
    let unsigned = 0;
    let scale = 1;
    for (let i = 0; i < bytesMax && at + i < end; i++) {
      const byte = this.buf[at + i];
      unsigned += (byte & 0x7f) * scale;
      if (byte < 0x80) {
        if (!Number.isSafeInteger(unsigned)) return NaN;
        this.next = at + i + 1;
        return unsigned % 2 === 0 ? unsigned / 2 : -(unsigned + 1) / 2;
      }
      scale *= 0x80;
    }
    return NaN;
  }
}
