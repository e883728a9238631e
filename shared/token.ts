/**
 * The read-your-writes token: for each (collection, partition) a client touched, the offset its
 * reads must include. Opaque to clients, URL-safe (base64url, no padding), mergeable (max per
 * entry) and bound to one cluster. Layout of the bytes before base64url:
 *
 *   version (1 byte, 2) ‖ CRC-32C(UTF-8 cluster id) (4 bytes, big-endian)
 *   ‖ repeated: collection id (4 bytes, big-endian), partition and offset as unsigned LEB128
 *     varints; entries strictly increasing by (collection id, partition)
 *
 * A collection id is CRC-32C of the collection's name (`collectionId`); the log refuses to create a
 * collection whose id another one already has, so within a cluster an id names one collection.
 * A collection created again after a drop is a new incarnation k (the log counts them per name):
 * its id is CRC-32C of `name/k` (no name holds a `/`), so the dropped one's tokens name another
 * id, which the gateway recognises and refuses, and tokens stay as compact and mergeable.
 * One collection and partition at an offset below 2^21 is 14 bytes, 19 characters; any offset a
 * partition can reach (2^53) fits in 40. A token with no entries is valid: it asks for nothing
 * (and starts a change feed at the log start).
 */
import { crc32c } from './crc32c.js';
import { badRequest } from './errors.js';

export const TOKEN_VERSION = 2;
/** Bounds the work a hostile token can cause: 8 KiB of text covers hundreds of entries. */
export const TOKEN_CHARS_MAX = 8192;
const HEADER_BYTES = 5;
const COLLECTION_ID_BYTES = 4;
const VARINT_BYTES_MAX = 8;

/** collection id → partition → the highest offset that reads must include. */
export type TokenOffsets = ReadonlyMap<number, ReadonlyMap<number, number>>;

const utf8 = new TextEncoder();

export function clusterHash(clusterId: string): number {
  return crc32c(utf8.encode(clusterId));
}

/**
 * Ids already computed, by `name` or `name/k`: every read answers with a token naming its
 * collection, and the CRC of its name was a UTF-8 encode and a CRC a request. Bounded by
 * `COLLECTION_IDS_CACHED_MAX`, emptied when full (names come from requests).
 */
const collectionIds = new Map<string, number>();
export const COLLECTION_IDS_CACHED_MAX = 4096;

/** The 32-bit id tokens name a collection (in its `incarnation`, 0 until first dropped) by. */
export function collectionId(collection: string, incarnation = 0): number {
  const name = incarnation === 0 ? collection : `${collection}/${incarnation}`;
  let id = collectionIds.get(name);
  if (id === undefined) {
    if (collectionIds.size >= COLLECTION_IDS_CACHED_MAX) collectionIds.clear();
    id = crc32c(utf8.encode(name));
    collectionIds.set(name, id);
  }
  return id;
}

/** A token of one collection's partitions and offsets. */
export function collectionOffsets(
  collection: string,
  offsets: ReadonlyMap<number, number>,
  incarnation = 0,
): Map<number, Map<number, number>> {
  return new Map([[collectionId(collection, incarnation), new Map(offsets)]]);
}

/** What a token asks of one collection: partition → offset (empty when it names none). */
export function offsetsOf(
  token: TokenOffsets,
  collection: string,
  incarnation = 0,
): ReadonlyMap<number, number> {
  return token.get(collectionId(collection, incarnation)) ?? new Map();
}

/**
 * The earlier incarnation of `collection` a token names, if any: below `incarnation`, or (for a
 * collection the log does not hold, `incarnation` undefined) any of the first
 * `incarnationsCheckedMax`.
 */
export function droppedIncarnationIn(
  token: TokenOffsets,
  collection: string,
  incarnation: number | undefined,
  incarnationsCheckedMax: number,
): number | undefined {
  if (token.size === 0) return undefined;
  const below = incarnation ?? incarnationsCheckedMax;
  for (let k = 0; k < below; k++) {
    if (token.has(collectionId(collection, k))) return k;
  }
  return undefined;
}

/** Max per (collection, partition): a token that covers all of them. */
export function mergeTokenOffsets(...tokens: TokenOffsets[]): Map<number, Map<number, number>> {
  const merged = new Map<number, Map<number, number>>();
  for (const token of tokens) {
    for (const [id, partitions] of token) {
      let into = merged.get(id);
      if (into === undefined) merged.set(id, (into = new Map()));
      for (const [partition, offset] of partitions) {
        const current = into.get(partition);
        if (current === undefined || offset > current) into.set(partition, offset);
      }
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

function writeUint32(out: number[], value: number): void {
  out.push((value >>> 24) & 0xff, (value >>> 16) & 0xff, (value >>> 8) & 0xff, value & 0xff);
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
    const bytes: number[] = [TOKEN_VERSION];
    writeUint32(bytes, this.hash);
    for (const id of [...offsets.keys()].sort((a, b) => a - b)) {
      const partitions = offsets.get(id) as ReadonlyMap<number, number>;
      for (const partition of [...partitions.keys()].sort((a, b) => a - b)) {
        const offset = partitions.get(partition) as number;
        if (!(partition >= 0 && partition < this.partitions && Number.isSafeInteger(offset))) {
          throw new RangeError(`token entry ${id}/${partition}:${offset} out of range`);
        }
        writeUint32(bytes, id);
        writeVarint(bytes, partition);
        writeVarint(bytes, offset);
      }
    }
    return Buffer.from(bytes).toString('base64url');
  }

  /** Decodes a token from a client; anything malformed or from another cluster is a 400. */
  decode(text: string): Map<number, Map<number, number>> {
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
    const offsets = new Map<number, Map<number, number>>();
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
    let previousId = -1;
    let previousPartition = -1;
    while (at < bytes.length) {
      if (bytes.length - at < COLLECTION_ID_BYTES)
        invalid('token ends inside an entry', 'malformed');
      const id = bytes.readUInt32BE(at);
      at += COLLECTION_ID_BYTES;
      const partition = readVarint();
      const offset = readVarint();
      if (id < previousId || (id === previousId && partition <= previousPartition)) {
        invalid('token entries are not increasing', 'malformed');
      }
      if (partition >= this.partitions) {
        invalid(`token names partition ${partition} of ${this.partitions}`, 'partition');
      }
      if (!Number.isSafeInteger(offset)) invalid('token offset is too large', 'malformed');
      let partitions = offsets.get(id);
      if (partitions === undefined) offsets.set(id, (partitions = new Map()));
      partitions.set(partition, offset);
      previousId = id;
      previousPartition = partition;
    }
    return offsets;
  }
}
