/**
 * The scale group's corpus: synthetic documents of about 770 bytes (a title, a body of Zipf-
 * distributed words, two numbers and two keywords), any number of them, each a function of the
 * seed and its index alone, so a size is regenerated identically on any machine and no size has
 * to fit in memory. Words are syllable strings ranked by frequency: rank r is drawn with
 * probability proportional to 1/r (Zipf, s = 1), as words of natural text are.
 */
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { seededRandom } from './seeded-random.js';

export const SCALE_SEED = 26;
const VOCABULARY_WORDS = 50_000;
const TITLE_WORDS_MIN = 3;
const TITLE_WORDS_SPAN = 6;
const BODY_WORDS_MIN = 110;
const BODY_WORDS_SPAN = 40;
const CATEGORIES = 20;
const TAGS = 200;
export const YEAR_FIRST = 1950;
export const YEARS = 75;
/** The share of documents the mid-frequency searches aim at (issue 26: ~0.5%). */
export const MID_FREQUENCY_SHARE = 0.005;
export const MID_TERMS = 20;
/** The filtered search's filter: category c01 holds ~14% of documents (Zipf over 20 values). */
export const FILTER_CATEGORY = 'c01';
export const FILTER = `category = ${FILTER_CATEGORY}`;

const CONSONANTS = 'bcdfghjklmnprstvz';
const VOWELS = 'aeiou';
const SYLLABLES = [...CONSONANTS].flatMap((c) => [...VOWELS].map((v) => c + v));

export interface ScaleDoc {
  key: string;
  value: {
    title: string;
    body: string;
    year: number;
    price: number;
    category: string;
    tag: string;
  };
}

/** Rank r (0-based) as syllables: the commonest words are the shortest, as in real text. */
export function wordOf(rank: number): string {
  let n = rank;
  let word = '';
  do {
    word += SYLLABLES[n % SYLLABLES.length];
    n = Math.floor(n / SYLLABLES.length);
  } while (n > 0);
  return rank < SYLLABLES.length ? word + 'n' : word;
}

/** Cumulative Zipf weights over `count` ranks, to draw a rank by binary search. */
function zipfTable(count: number): Float64Array {
  const table = new Float64Array(count);
  let sum = 0;
  for (let r = 0; r < count; r++) {
    sum += 1 / (r + 1);
    table[r] = sum;
  }
  for (let r = 0; r < count; r++) table[r] /= sum;
  return table;
}

function draw(table: Float64Array, next: () => number): number {
  const u = next();
  let low = 0;
  let high = table.length - 1;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (table[mid] < u) low = mid + 1;
    else high = mid;
  }
  return low;
}

const words = zipfTable(VOCABULARY_WORDS);
const categories = zipfTable(CATEGORIES);
const tags = zipfTable(TAGS);

function sentence(count: number, next: () => number): string {
  const out: string[] = [];
  for (let i = 0; i < count; i++) out.push(wordOf(draw(words, next)));
  return out.join(' ');
}

export const keyOfScale = (index: number) => `doc-${String(index).padStart(8, '0')}`;

/** Document `index` of the corpus: the same for the same seed, whatever else was generated. */
export function scaleDoc(index: number, seed = SCALE_SEED): ScaleDoc {
  const next = seededRandom(Math.imul(seed, 0x9e3779b1) ^ index);
  const title = sentence(TITLE_WORDS_MIN + Math.floor(next() * TITLE_WORDS_SPAN), next);
  const body = sentence(BODY_WORDS_MIN + Math.floor(next() * BODY_WORDS_SPAN), next);
  return {
    key: keyOfScale(index),
    value: {
      title,
      body,
      year: YEAR_FIRST + Math.floor(next() * YEARS),
      price: Math.round(next() * 100_000) / 100,
      category: `c${String(draw(categories, next)).padStart(2, '0')}`,
      tag: `t${String(draw(tags, next)).padStart(3, '0')}`,
    },
  };
}

/** The share of documents expected to hold the word of `rank` at least once. */
function documentShare(rank: number): number {
  const p = words[rank] - (rank > 0 ? words[rank - 1] : 0);
  const meanWords = TITLE_WORDS_MIN + TITLE_WORDS_SPAN / 2 + BODY_WORDS_MIN + BODY_WORDS_SPAN / 2;
  return 1 - (1 - p) ** meanWords;
}

/** The words nearest to MID_FREQUENCY_SHARE of documents, the mid-frequency search terms. */
export function midFrequencyTerms(count = MID_TERMS): string[] {
  let rank = 0;
  while (rank < VOCABULARY_WORDS - count && documentShare(rank) > MID_FREQUENCY_SHARE) rank++;
  const first = Math.max(0, rank - Math.floor(count / 2));
  return Array.from({ length: count }, (_, i) => wordOf(first + i));
}

/** The commonest word: in nearly every document. */
export const COMMON_TERM = wordOf(0);

/**
 * Writes documents [0, count) to `file` as bulk NDJSON lines (`{key, value}`), the raw input both
 * databases load; returns its bytes.
 */
export async function writeScaleCorpus(file: string, count: number): Promise<number> {
  const out = createWriteStream(file);
  let bytes = 0;
  for (let i = 0; i < count; i++) {
    const line = JSON.stringify(scaleDoc(i)) + '\n';
    bytes += Buffer.byteLength(line);
    if (!out.write(line)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
  return bytes;
}
