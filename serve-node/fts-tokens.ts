/**
 * Texts tokenized as FTS5 tokenizes them, so the terms the top-k lists (topk-index.ts) hold and
 * look up are exactly those of the collection's table whatever its tokenizer. An ASCII text
 * under unicode61 is tokenized here: unicode61 takes the ASCII letters and digits as token
 * characters (the categories L* and N*), every other ASCII character as a separator, and lowers
 * A-Z, with nothing else to it (test/unit/fts-tokens.test.ts checks every ASCII character and
 * seeded texts against FTS5). Every other text goes through FTS5 itself: into a temporary
 * contentless FTS5 table of that tokenizer and back out of an fts5vocab 'instance' table over it,
 * then one 'delete-all' clears it (about 40% of a write's cost of the lists when every text took
 * that way). Temporary tables belong to the connection, so each connection (each thread's
 * handle) tokenizes on its own.
 */
import type Database from 'better-sqlite3';
import type { Statement } from 'better-sqlite3';
import { assert } from '../shared/assert.js';
import { TOKENIZERS } from './collection-settings.js';

export interface TokenizedText {
  /** Each term and the times it occurs, in term order (unless the caller asked for any order). */
  counts: Map<string, number>;
  /** Tokens in the text: FTS5's size of it. */
  tokens: number;
}

interface Tokenizer {
  insert: Statement;
  instances: Statement;
  clear: Statement;
}

/** The tokenizer whose ASCII texts are tokenized here. */
const UNICODE61: (typeof TOKENIZERS)[number] = 'unicode61 remove_diacritics 2';
const NOT_ASCII = /[^\x00-\x7f]/;
const [CODE_A, CODE_Z, CODE_0, CODE_9] = ['a', 'z', '0', '9'].map((c) => c.charCodeAt(0));
/**
 * FTS5_MAX_TOKEN_SIZE: FTS5 indexes a longer token's first bytes only; a text with one goes
 * through FTS5 rather than copy that rule.
 */
const TOKEN_BYTES_MAX = 32_768;

/**
 * An ASCII text as unicode61 tokenizes it, or null where it holds a token past FTS5's size; its
 * terms in FTS5's order (their bytes') when `sorted`, else in the order they first occur.
 */
function asciiTokens(text: string, sorted: boolean): TokenizedText | null {
  const counts = new Map<string, number>();
  let tokens = 0;
  const lower = text.toLowerCase();
  let start = -1;
  // A loop over char codes, not a regular expression's matches: a write tokenizes every text
  // it indexes, and the matches' arrays were a fifth of a write's cost of the lists.
  for (let i = 0; i <= lower.length; i++) {
    const c = i < lower.length ? lower.charCodeAt(i) : 0;
    if ((c >= CODE_A && c <= CODE_Z) || (c >= CODE_0 && c <= CODE_9)) {
      if (start < 0) start = i;
      continue;
    }
    if (start < 0) continue;
    if (i - start > TOKEN_BYTES_MAX) return null;
    const term = lower.slice(start, i);
    counts.set(term, (counts.get(term) ?? 0) + 1);
    tokens += 1;
    start = -1;
  }
  if (!sorted) return { counts, tokens };
  const terms = [...counts.keys()].sort();
  return { counts: new Map(terms.map((term) => [term, counts.get(term)!])), tokens };
}

export class FtsTokenizers {
  private readonly byTokenizer = new Map<string, Tokenizer>();

  constructor(private readonly db: Database.Database) {}

  /**
   * Each of `texts` as FTS5 tokenizes it with `tokenizer` (one of TOKENIZERS), its terms in
   * FTS5's order, or (`sorted` false, for a caller that only counts them) in any order.
   */
  tokenize(tokenizer: string, texts: readonly string[], sorted = true): TokenizedText[] {
    if (tokenizer !== UNICODE61) return this.tokenizeByFts5(tokenizer, texts);
    const result = texts.map((text) => (NOT_ASCII.test(text) ? null : asciiTokens(text, sorted)));
    const rest = texts.filter((_, i) => result[i] === null);
    if (rest.length === 0) return result as TokenizedText[];
    const byFts5 = this.tokenizeByFts5(tokenizer, rest);
    let at = 0;
    return result.map((text) => text ?? byFts5[at++]);
  }

  /** Each of `texts` tokenized by FTS5 itself, whatever they hold. */
  tokenizeByFts5(tokenizer: string, texts: readonly string[]): TokenizedText[] {
    const result = texts.map(() => ({ counts: new Map<string, number>(), tokens: 0 }));
    if (texts.length === 0) return result;
    const statements = this.tokenizer(tokenizer);
    // One transaction (a savepoint inside the store's own), so FTS5 writes no segment to disk.
    this.db.transaction(() => {
      try {
        texts.forEach((text, i) => statements.insert.run(i, text));
        const rows = statements.instances.raw().all() as Array<[number, string, number]>;
        for (const [doc, term, n] of rows) {
          const text = result[doc];
          text.counts.set(term, n);
          text.tokens += n;
        }
      } finally {
        statements.clear.run();
      }
    })();
    return result;
  }

  private tokenizer(tokenizer: string): Tokenizer {
    let statements = this.byTokenizer.get(tokenizer);
    if (statements === undefined) {
      const index = TOKENIZERS.indexOf(tokenizer as (typeof TOKENIZERS)[number]);
      assert(index >= 0, `no tokenizer ${tokenizer}`);
      const name = `tokens_${index}`;
      this.db.exec(
        `CREATE VIRTUAL TABLE IF NOT EXISTS temp.${name} USING fts5(text, content = '', ` +
          `tokenize = '${tokenizer}');` +
          `CREATE VIRTUAL TABLE IF NOT EXISTS temp.${name}_instances ` +
          `USING fts5vocab(temp, ${name}, instance);`,
      );
      statements = {
        insert: this.db.prepare(`INSERT INTO temp.${name} (rowid, text) VALUES (?, ?)`),
        instances: this.db.prepare(
          `SELECT doc, term, count(*) FROM temp.${name}_instances GROUP BY doc, term`,
        ),
        clear: this.db.prepare(`INSERT INTO temp.${name} (${name}) VALUES ('delete-all')`),
      };
      this.byTokenizer.set(tokenizer, statements);
    }
    return statements;
  }
}
