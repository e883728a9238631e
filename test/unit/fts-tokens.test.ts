// Proves the top-k lists' tokenizer gives exactly FTS5's terms and token counts: every ASCII
// character between letters, alone and doubled, seeded ASCII texts, texts FTS5 must tokenize
// itself (accents, other scripts, combining marks, a lone surrogate, a token past FTS5's size)
// mixed into one batch with ASCII ones, and the porter tokenizer; the same as term numbers
// (tokenizeIds, the top-k lists' writer's).
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TOKENIZERS } from '../../serve-node/collection-settings.js';
import { FtsTokenizers, type TokenizedText } from '../../serve-node/fts-tokens.js';
import { TermIds } from '../../serve-node/topk-term-ids.js';
import { seededRandom, testSeed } from '../harness/index.js';

let db: Database.Database;
let tokenizers: FtsTokenizers;

beforeEach(() => {
  db = new Database(':memory:');
  tokenizers = new FtsTokenizers(db);
});

afterEach(() => db.close());

/** Terms in no particular order: compared sorted. */
const plain = (texts: TokenizedText[]) =>
  texts.map(({ counts, tokens }) => ({
    counts: [...counts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    tokens,
  }));

/** A text's term numbers (one a token) as its terms counted. */
function counted(ids: number[], terms: TermIds): TokenizedText {
  const counts = new Map<string, number>();
  for (const id of ids) counts.set(terms.termOf(id), (counts.get(terms.termOf(id)) ?? 0) + 1);
  return { counts, tokens: ids.length };
}

function expectAsFts5(tokenizer: string, texts: string[]): void {
  const byFts5 = plain(tokenizers.tokenizeByFts5(tokenizer, texts));
  expect(plain(tokenizers.tokenize(tokenizer, texts))).toEqual(byFts5);
  const terms = new TermIds();
  const numbered = tokenizers.tokenizeIds(tokenizer, texts, terms);
  expect(plain(numbered.map((ids) => counted(ids, terms)))).toEqual(byFts5);
}

describe('FTS5 tokens', () => {
  it('are FTS5 own for every ASCII character, alone, doubled and between letters', () => {
    const texts: string[] = [];
    for (let code = 0; code < 128; code++) {
      const c = String.fromCharCode(code);
      texts.push(c, `${c}${c}`, `a${c}B`, `Z9${c}${c}x`, `${c}q ${c}`);
    }
    for (const tokenizer of TOKENIZERS) expectAsFts5(tokenizer, texts);
  });

  it('are FTS5 own for seeded ASCII texts and non-ASCII texts in one batch', () => {
    const seed = testSeed('fts-tokens');
    const random = seededRandom(seed);
    const alphabet = 'aZ09 .,-_\'"\t\n\u0000\u007f/+*#@';
    const others = [
      'Café naïve ÉCOLE',
      'Straße ß ǅ Ⅻ ½',
      '東京 タワー',
      'e\u0301te\u0301 a\u0300',
      'emoji 😀 mid😀word',
      'lone \ud800 surrogate',
      'ﬁne ligature',
      `${'x'.repeat(40_000)} tail`,
    ];
    const texts: string[] = [];
    for (let i = 0; i < 2_000; i++) {
      const length = random.int(0, 60);
      let text = '';
      for (let j = 0; j < length; j++) text += random.pick([...alphabet]);
      texts.push(i % 50 === 0 ? random.pick(others) : text);
    }
    for (const tokenizer of TOKENIZERS) {
      expectAsFts5(tokenizer, texts);
      expectAsFts5(tokenizer, others);
    }
  });
});
