// Proves the top-k lists' writer numbers terms one to one: an ASCII token read from its text
// (any case) and the same term as a string get one number, through many rehashes and colliding
// hashes' probes, and every term keeps its number and text.
import { describe, expect, it } from 'vitest';
import { TermIds } from '../../serve-node/topk-term-ids.js';
import { seededRandom, testSeed } from '../harness/index.js';

describe('term ids', () => {
  it('give one number a term, from its text in any case or as a string', () => {
    const random = seededRandom(testSeed('topk-term-ids'));
    const alphabet = 'abcXYZ019';
    const terms = new TermIds();
    const byTerm = new Map<string, number>();
    for (let i = 0; i < 40_000; i++) {
      let token = '';
      for (let j = random.int(1, 8); j > 0; j--) token += random.pick([...alphabet]);
      const text = `${'.'.repeat(random.int(0, 3))}${token} `;
      const start = text.indexOf(token);
      const id = terms.idOfAscii(text, start, start + token.length);
      const term = token.toLowerCase();
      expect(byTerm.get(term) ?? id).toBe(id);
      byTerm.set(term, id);
    }
    expect(terms.size).toBe(byTerm.size);
    expect(byTerm.size).toBeGreaterThan(10_000);
    for (const [term, id] of byTerm) {
      expect(terms.termOf(id)).toBe(term);
      expect(terms.idOf(term)).toBe(id);
    }
    expect(terms.idOf('é')).toBe(byTerm.size);
    expect(terms.idOfAscii('a\u00e9', 0, 1)).toBe(byTerm.get('a'));
  });
});
