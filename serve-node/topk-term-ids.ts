/**
 * Terms numbered for the top-k lists' writer (topk-index.ts), so that what a transaction keeps of
 * each term (its rows' frequencies, its change of document frequency, what is known of it) sits
 * in arrays indexed by number rather than in maps keyed by the term's text. A term is found by a
 * hash of its characters in a table of numbers, its characters compared with the term's: an
 * ASCII token is numbered straight from the text it is in (lowered on the way, as unicode61
 * lowers it), with no string made for it unless it is new. A map of strings cost a string a token (cut from
 * the text and lowered), a hash and a comparison of scattered strings at each lookup, and
 * garbage. The numbers are this connection's and never stored; each table has its own, dense
 * over its terms, so what is kept of a table by number grows with its terms, not every table's.
 */
import { assert } from '../shared/assert.js';

const SLOTS_INITIAL = 4096;
const A_UPPER = 0x41;
const Z_UPPER = 0x5a;
const LOWER = 0x20;
const HASH_SEED = 0x811c9dc5;
const HASH_PRIME = 0x01000193;

/** `c`, lowered if `lower` and an ASCII capital (as unicode61 lowers it). */
function charOf(c: number, lower: boolean): number {
  return lower && c >= A_UPPER && c <= Z_UPPER ? c | LOWER : c;
}

/** FNV-1a of `text[start..end)`'s code units, lowered where `lower`. */
function hashOf(text: string, start: number, end: number, lower: boolean): number {
  let hash = HASH_SEED;
  for (let i = start; i < end; i++)
    hash = Math.imul(hash ^ charOf(text.charCodeAt(i), lower), HASH_PRIME);
  return hash;
}

function equals(term: string, text: string, start: number, end: number, lower: boolean): boolean {
  if (term.length !== end - start) return false;
  for (let i = start; i < end; i++) {
    if (term.charCodeAt(i - start) !== charOf(text.charCodeAt(i), lower)) return false;
  }
  return true;
}

export class TermIds {
  /** Open addressing: a term's id plus one at the first free slot from its hash, 0 when free. */
  private slots = new Int32Array(SLOTS_INITIAL);
  private hashes = new Int32Array(SLOTS_INITIAL / 2);
  private readonly terms: string[] = [];

  /** The number of the ASCII token `text[start..end)` lowered (A-Z to a-z), given now if new. */
  idOfAscii(text: string, start: number, end: number): number {
    const hash = hashOf(text, start, end, true);
    const found = this.probe(hash, text, start, end, true);
    return found >= 0 ? found : this.add(text.slice(start, end).toLowerCase(), hash, ~found);
  }

  /** The term's number, given now if it has none. */
  idOf(term: string): number {
    const hash = hashOf(term, 0, term.length, false);
    const found = this.probe(hash, term, 0, term.length, false);
    return found >= 0 ? found : this.add(term, hash, ~found);
  }

  termOf(id: number): string {
    return this.terms[id];
  }

  get size(): number {
    return this.terms.length;
  }

  /** The bytes of its arrays by number (the terms' strings apart). */
  get arrayBytes(): number {
    return this.slots.byteLength + this.hashes.byteLength;
  }

  /** The id of `text[start..end)` (lowered where `lower`), else ~ the free slot it would take. */
  private probe(hash: number, text: string, start: number, end: number, lower: boolean): number {
    const mask = this.slots.length - 1;
    for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
      const held = this.slots[slot];
      if (held === 0) return ~slot;
      const id = held - 1;
      if (this.hashes[id] === hash && equals(this.terms[id], text, start, end, lower)) return id;
    }
  }

  private add(term: string, hash: number, slot: number): number {
    const id = this.terms.length;
    this.terms.push(term);
    if (id >= this.hashes.length) {
      const hashes = new Int32Array(this.hashes.length * 2);
      hashes.set(this.hashes);
      this.hashes = hashes;
    }
    this.hashes[id] = hash;
    this.slots[slot] = id + 1;
    // Kept at most half full, so a probe finds a free slot soon.
    if ((id + 1) * 2 > this.slots.length) this.rehash();
    return id;
  }

  private rehash(): void {
    this.slots = new Int32Array(this.slots.length * 2);
    const mask = this.slots.length - 1;
    for (let id = 0; id < this.terms.length; id++) {
      let slot = this.hashes[id] & mask;
      while (this.slots[slot] !== 0) slot = (slot + 1) & mask;
      this.slots[slot] = id + 1;
    }
    assert(this.terms.length * 2 <= this.slots.length, 'term slots are at most half full');
  }
}

const TERM_VALUES_INITIAL = 1024;

/** A number a term id, `fill` where none was set, grown as ids are given. */
export class TermValues {
  private values: Int32Array<ArrayBuffer> | Float64Array<ArrayBuffer>;

  /** `int32`: the values are integers of 32 bits (half the bytes). */
  constructor(
    private readonly fill: number,
    private readonly int32 = false,
  ) {
    this.values = this.allocate(TERM_VALUES_INITIAL);
  }

  get(id: number): number {
    return id < this.values.length ? this.values[id] : this.fill;
  }

  set(id: number, value: number): void {
    if (this.int32 && (value | 0) !== value) assert(false, `${value} is not a 32-bit integer`);
    if (id >= this.values.length) this.grow(id);
    this.values[id] = value;
  }

  /** The bytes of the values held, set or not. */
  get arrayBytes(): number {
    return this.values.byteLength;
  }

  private allocate(length: number): Int32Array<ArrayBuffer> | Float64Array<ArrayBuffer> {
    return (this.int32 ? new Int32Array(length) : new Float64Array(length)).fill(this.fill);
  }

  private grow(id: number): void {
    let length = this.values.length;
    while (length <= id) length *= 2;
    const values = this.allocate(length);
    values.set(this.values);
    this.values = values;
  }
}
