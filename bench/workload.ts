/**
 * The work the gateway and its peers are measured on, written once so a tailbase/peer ratio
 * compares the same load: connections, the key set and the document PUT and upserted, and the
 * search corpus and terms.
 */
import type { CorpusDoc } from './corpus.js';

export const CONNECTIONS = 64;
export const KEYS = 2_000;
/** `key-000042`; PostgreSQL's `'key-' || lpad(i::text, 6, '0')` builds the same keys. */
export const keyOf = (i: number) => `key-${String(i).padStart(6, '0')}`;
export const DOCUMENT = JSON.stringify({ title: 'benchmark document', n: 1, pad: 'x'.repeat(64) });
/** Search terms: distinct title words of at least four letters, in corpus order. */
export const SEARCH_TERMS_MAX = 200;
/** A quick run searches this many corpus documents. */
const QUICK_CORPUS_DOCS = 500;

export function searchCorpus(docs: readonly CorpusDoc[], quick: boolean): CorpusDoc[] {
  return docs.slice(0, quick ? QUICK_CORPUS_DOCS : undefined);
}

export function searchTerms(docs: readonly CorpusDoc[], max: number): string[] {
  const words = docs.flatMap((doc) => doc.value.title.toLowerCase().match(/\p{L}{4,}/gu) ?? []);
  return [...new Set(words)].slice(0, max);
}

/** Documents a skew query term is in, at least: past 10, a top 10 has to choose. */
const SKEW_TERM_DOCS_MIN = 20;

/**
 * Queries whose top 10 depends on ranking (each term in at least 20 documents, at most a fifth of
 * them): single terms, most frequent first, then pairs of them joined with OR.
 */
export function skewQueries(docs: readonly CorpusDoc[], count: number): string[] {
  const documentsWith = new Map<string, number>();
  for (const doc of docs) {
    // Tokens as FTS5's unicode61 cuts them (runs of letters and digits: us-central1 holds
    // central1, not central); the terms kept are words of four letters or more.
    const text = `${doc.value.title} ${doc.value.body}`.toLowerCase();
    for (const token of new Set(text.match(/[\p{L}\p{N}]+/gu) ?? [])) {
      if (/^\p{L}{4,}$/u.test(token)) documentsWith.set(token, (documentsWith.get(token) ?? 0) + 1);
    }
  }
  const terms = [...documentsWith]
    .filter(([, n]) => n >= SKEW_TERM_DOCS_MIN && n <= docs.length / 5)
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .map(([word]) => word);
  const singles = terms.slice(0, Math.ceil(count / 2));
  const pairs = singles.map((word, i) => `${word} OR ${terms[(i * 7 + 3) % terms.length]}`);
  return [...singles, ...pairs].slice(0, count);
}
