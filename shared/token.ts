/**
 * The read-your-writes token: for each partition a client touched, the offset its reads must
 * include. Opaque to clients, URL-safe (base64url, no padding), mergeable (max per partition)
 * and bound to one cluster. Layout of the bytes before base64url:
 *
 *   version (1 byte, 1) ‖ CRC-32C(UTF-8 cluster id) (4 bytes, big-endian)
 *   ‖ repeated (partition, offset) as unsigned LEB128 varints, partitions strictly increasing
 *
 * One partition at an offset below 2^21 is 9 bytes, 12 characters. A token with no pairs is valid:
 * it asks for nothing (and starts a change feed at the log start).
 */
import { crc32c } from './crc32c.js';
import { badRequest } from './errors.js';

export const TOKEN_VERSION = 1;
/** Bounds the work a hostile token can cause: 8 KiB of text covers thousands of partitions. */
export const TOKEN_CHARS_MAX = 8192;
const HEADER_BYTES = 5;
const VARINT_BYTES_MAX = 8;

/** partition → the highest offset that reads must include. */
export type TokenOffsets = ReadonlyMap<number, number>;

const utf8 = new TextEncoder();

export function clusterHash(clusterId: string): number {
  return crc32c(utf8.encode(clusterId));
}

/** Max per partition: a token that covers both. */
export function mergeTokenOffsets(...tokens: TokenOffsets[]): Map<number, number> {
  const merged = new Map<number, number>();
  for (const token of tokens) {
    for (const [partition, offset] of token) {
      const current = merged.get(partition);
      if (current === undefined || offset > current) merged.set(partition, offset);
    }
  }
  return merged;
}

function writeVarint(out: number[], value: number): void {
  let rest = value;
  while (rest >= 0x80) {
    out.push((rest % 0x80) | 0x80);
    rest = Math.floor(rest / 0x80);
  }
  out.push(rest);
}

function invalid(message: string, reason: string): never {
  throw badRequest('invalid_token', message, { reason });
}

export class TokenCodec {
  private readonly hash: number;

  constructor(
    readonly clusterId: string,
    readonly partitions: number,
  ) {
    this.hash = clusterHash(clusterId);
  }

  encode(offsets: TokenOffsets): string {
    const bytes: number[] = [
      TOKEN_VERSION,
      (this.hash >>> 24) & 0xff,
      (this.hash >>> 16) & 0xff,
      (this.hash >>> 8) & 0xff,
      this.hash & 0xff,
    ];
    for (const partition of [...offsets.keys()].sort((a, b) => a - b)) {
      const offset = offsets.get(partition) as number;
      if (!(partition >= 0 && partition < this.partitions && Number.isSafeInteger(offset))) {
        throw new RangeError(`token entry ${partition}:${offset} out of range`);
      }
      writeVarint(bytes, partition);
      writeVarint(bytes, offset);
    }
    return Buffer.from(bytes).toString('base64url');
  }

  /** Decodes a token from a client; anything malformed or from another cluster is a 400. */
  decode(text: string): Map<number, number> {
    if (text.length === 0 || text.length > TOKEN_CHARS_MAX || !/^[A-Za-z0-9_-]+$/.test(text)) {
      invalid('token is not a base64url string of a usable length', 'malformed');
    }
    const bytes = Buffer.from(text, 'base64url');
    if (bytes.toString('base64url') !== text)
      invalid('token is not canonical base64url', 'malformed');
    if (bytes.length < HEADER_BYTES) invalid('token is cut short', 'malformed');
    if (bytes[0] !== TOKEN_VERSION) invalid(`token version ${bytes[0]} is unknown`, 'version');
    if (bytes.readUInt32BE(1) !== this.hash) {
      invalid('token belongs to another cluster', 'foreign_cluster');
    }
    const offsets = new Map<number, number>();
    let at = HEADER_BYTES;
    const readVarint = (): number => {
      let value = 0;
      let scale = 1;
      for (let i = 0; i < VARINT_BYTES_MAX; i++) {
        if (at >= bytes.length) invalid('token ends inside a number', 'malformed');
        const byte = bytes[at++];
        value += (byte & 0x7f) * scale;
        if (byte < 0x80) {
          if (byte === 0 && i > 0) invalid('token number is not minimally encoded', 'malformed');
          return value;
        }
        scale *= 0x80;
      }
      return invalid('token number is too long', 'malformed');
    };
    let previous = -1;
    while (at < bytes.length) {
      const partition = readVarint();
      const offset = readVarint();
      if (partition <= previous) invalid('token partitions are not increasing', 'malformed');
      if (partition >= this.partitions) {
        invalid(`token names partition ${partition} of ${this.partitions}`, 'partition');
      }
      if (!Number.isSafeInteger(offset)) invalid('token offset is too large', 'malformed');
      offsets.set(partition, offset);
      previous = partition;
    }
    return offsets;
  }
}
