// Proves user queries become FTS5 expressions made only of quoted strings and operators we emit.
import { describe, expect, it } from 'vitest';
import { parseQuery } from '../../serve-node/fts-query.js';
import { TailbaseError } from '../../shared/errors.js';

const limits = { queryBytesMax: 1024, queryTermsMax: 32 };

describe('parseQuery', () => {
  it('turns terms, phrases, prefixes, exclusions and OR into quoted FTS5', () => {
    expect(parseQuery('hello world', limits).match).toBe('("hello" AND "world")');
    expect(parseQuery('"quick fox" jump*', limits).match).toBe('("quick fox" AND "jump" *)');
    expect(parseQuery('cat -dog', limits).match).toBe('(("cat") NOT ("dog"))');
    expect(parseQuery('cat OR dog', limits).match).toBe('("cat") OR ("dog")');
    expect(parseQuery('cat -dog OR bird', limits).highlightMatch).toBe('"cat" OR "bird"');
  });

  it('gives the words top-k lists may answer: all of a group, or any of groups of one', () => {
    const words = (q: string) => parseQuery(q, limits).words;
    expect(words('cat')).toEqual({ texts: ['cat'], all: true });
    expect(words('cat dog "bird"')).toEqual({ texts: ['cat', 'dog', 'bird'], all: true });
    expect(words('cat OR dog OR cat')).toEqual({ texts: ['cat', 'dog', 'cat'], all: false });
    for (const q of ['cat OR dog bird', 'cat*', 'cat -dog', 'cat OR dog*']) {
      expect(words(q), q).toBeNull();
    }
  });

  it('keeps FTS5 syntax in the input as text', () => {
    expect(parseQuery('title:x NEAR(a b) ^c', limits).match).toBe(
      '("title:x" AND "NEAR(a" AND "b)" AND "^c")',
    );
    expect(parseQuery('say "he said ""hi', limits).match).toBe('("say" AND "he said " AND "hi")');
    expect(parseQuery('a\u0000b', limits).match).toBe('("a" AND "b")');
  });

  it('rejects queries with nothing to find, too long, or too many terms', () => {
    for (const q of ['-only', '***', 'OR', '"" - *', 'x'.repeat(2000), 'a '.repeat(40)]) {
      expect(() => parseQuery(q, limits), q).toThrow(TailbaseError);
    }
  });
});
