/**
 * A block of a top-k list (FORMAT.md): up to BLOCK_POSTINGS_MAX postings of one term and weighted
 * frequency, in the search's order of equal frequencies (row tokens, then partition, then offset),
 * packed into one blob. A posting costs a byte or two where its row follows the last one's in the
 * same partition and length, about five where it does not, against 18.5 bytes as a B-tree entry
 * of its own (layout 7).
 */
import { assert } from '../shared/assert.js';
import { offsetOfRow, partitionOfRow, ROW_PARTITIONS } from './fts-table.js';

/**
 * Postings a block holds at most: a write rewrites the whole block it lands in, and a search
 * decodes a run's first block (every run's) to merge them, so blocks stay small beside a page;
 * a block's key and cell (about 20 bytes) are a fraction of a byte a posting.
 */
export const BLOCK_POSTINGS_MAX = 64;

/** One row holding a term: its tokens (`len`) and its row (`offset * 1024 + partition`). */
export interface Posting {
  len: number;
  row: number;
}

/** Offsets stay below 2^53 / ROW_PARTITIONS (rowOf): the tie key packs a partition above them. */
const TIE_OFFSETS = 2 ** 53 / ROW_PARTITIONS;

/**
 * The order of equal scores (partition, then offset) as one integer: with `len`, a block's key.
 */
export function tieOf(row: number): number {
  return partitionOfRow(row) * TIE_OFFSETS + offsetOfRow(row);
}

/** The search's order of postings of one frequency: `len`, then partition, then offset. */
export function comparePostings(a: Posting, b: Posting): number {
  return a.len - b.len || partitionOfRow(a.row) - partitionOfRow(b.row) || a.row - b.row;
}

/** A varint of a safe integer takes at most 8 bytes; a posting at most three of them. */
const BLOCK_BYTES_MAX = BLOCK_POSTINGS_MAX * 3 * 8;
/** Where blocks are encoded before being copied out at their length (one writer a thread). */
const scratch = new Uint8Array(BLOCK_BYTES_MAX);

/** Writes `value` at `at` in `scratch`; answers the position after it. */
function writeVarint(at: number, value: number): number {
  assert(Number.isSafeInteger(value) && value >= 0, `no varint of ${value}`);
  let rest = value;
  let end = at;
  while (rest >= 0x80) {
    scratch[end++] = (rest % 0x80) | 0x80;
    rest = Math.floor(rest / 0x80);
  }
  scratch[end++] = rest;
  return end;
}

/**
 * Each posting as a varint of `lenDelta * 2 + flag`, then with the flag (a new length or
 * partition) the partition and the offset, else the offset's distance from the last posting's.
 * Postings must come in comparePostings order.
 */
export function encodeBlock(postings: readonly Posting[]): Buffer {
  assert(postings.length > 0 && postings.length <= BLOCK_POSTINGS_MAX, 'a block is 1..max');
  let at = 0;
  let [len, partition, offset] = [0, -1, 0];
  for (const posting of postings) {
    const [p, o] = [partitionOfRow(posting.row), offsetOfRow(posting.row)];
    assert(posting.len >= len, 'postings come in order');
    const fresh = posting.len !== len || p !== partition;
    at = writeVarint(at, (posting.len - len) * 2 + (fresh ? 1 : 0));
    if (fresh) {
      at = writeVarint(at, p);
      at = writeVarint(at, o);
    } else {
      assert(o > offset, 'postings come in order, each row once');
      at = writeVarint(at, o - offset);
    }
    [len, partition, offset] = [posting.len, p, o];
  }
  return Buffer.from(scratch.subarray(0, at));
}

/** Reads a block's postings one at a time, so a search decodes only what it merges. */
export class BlockReader {
  private at = 0;
  private len = 0;
  private partition = -1;
  private offset = 0;

  constructor(private readonly bytes: Uint8Array) {}

  /** The next posting, or null past the last. */
  next(): Posting | null {
    if (this.at === this.bytes.length) return null;
    const head = this.varint();
    this.len += Math.floor(head / 2);
    if (head % 2 === 1) {
      this.partition = this.varint();
      this.offset = this.varint();
    } else {
      this.offset += this.varint();
    }
    return { len: this.len, row: this.offset * ROW_PARTITIONS + this.partition };
  }

  private varint(): number {
    let value = 0;
    let scale = 1;
    for (;;) {
      const byte = this.bytes[this.at++];
      assert(byte !== undefined, 'a top-k block ends inside a varint');
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
      scale *= 0x80;
    }
  }
}

export function decodeBlock(bytes: Uint8Array): Posting[] {
  const reader = new BlockReader(bytes);
  const postings: Posting[] = [];
  for (let posting = reader.next(); posting !== null; posting = reader.next()) {
    postings.push(posting);
  }
  return postings;
}

/** Postings cut into blocks of at most BLOCK_POSTINGS_MAX, as even as they go. */
export function splitBlocks(postings: readonly Posting[]): Posting[][] {
  const count = Math.ceil(postings.length / BLOCK_POSTINGS_MAX);
  const blocks: Posting[][] = [];
  for (let i = 0; i < count; i++) {
    blocks.push(
      postings.slice(
        Math.floor((i * postings.length) / count),
        Math.floor(((i + 1) * postings.length) / count),
      ),
    );
  }
  return blocks;
}
