/**
 * The work of the filters group (issue 16), written once for tailbase and PostgreSQL: the search
 * corpus with a numeric and a string field added to each document from its key, the selective
 * filter, and the wide query the facets are counted over.
 */
import { createHash } from 'node:crypto';
import type { CorpusDoc } from './corpus.js';

export const YEAR_FIRST = 1900;
export const YEARS = 100;
export const GENRES = 20;
/** A year value, so held by 1% of the documents: the selective filter. */
export const RARE_YEAR = 1950;
/**
 * The wide query: the most common word of the corpus, in 98% of its documents. The corpus (3371
 * documents here) cannot give 10,000 matches, so the group loads it as many times as it takes.
 */
export const WIDE_QUERY = 'the';
export const WIDE_MATCHES_MIN = 10_000;

export interface FieldDoc {
  key: string;
  value: CorpusDoc['value'] & { year: number; genre: string };
}

/** `year` uniform over 100 values and `genre` over 20, from two words of the key's SHA-256. */
export function fieldsOf(key: string): { year: number; genre: string } {
  const hash = createHash('sha256').update(key).digest();
  return {
    year: YEAR_FIRST + (hash.readUInt32BE(0) % YEARS),
    genre: `genre-${String(hash.readUInt32BE(4) % GENRES).padStart(2, '0')}`,
  };
}

/** Documents holding `word` as FTS5's unicode61 tokenizer cuts text (runs of letters and digits). */
export function documentsWith(docs: readonly CorpusDoc[], word: string): number {
  return docs.filter((doc) =>
    `${doc.value.title} ${doc.value.body}`
      .toLowerCase()
      .match(/[\p{L}\p{N}]+/gu)
      ?.includes(word),
  ).length;
}

/**
 * The corpus `copies` times (copy 0 keeps its keys, copy i has `~i` appended), each document
 * with its fields: the same real text, so the wide query reaches 10,000 matches.
 */
export function withFields(docs: readonly CorpusDoc[], copies: number): FieldDoc[] {
  const out: FieldDoc[] = [];
  for (let copy = 0; copy < copies; copy++) {
    for (const doc of docs) {
      const key = copy === 0 ? doc.key : `${doc.key}~${copy}`;
      out.push({ key, value: { ...doc.value, ...fieldsOf(key) } });
    }
  }
  return out;
}
