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
