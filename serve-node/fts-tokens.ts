/**
 * Texts tokenized by FTS5 itself, so the terms the top-k lists (topk-index.ts) hold and look up
 * are exactly those of the collection's table whatever its tokenizer: the texts go into a
 * temporary contentless FTS5 table of that tokenizer and come back out of an fts5vocab
 * 'instance' table over it, then one 'delete-all' clears it. Temporary tables belong to the
 * connection, so each connection (each thread's handle) tokenizes on its own.
 */
import type Database from 'better-sqlite3';
import type { Statement } from 'better-sqlite3';
import { assert } from '../shared/assert.js';
import { TOKENIZERS } from './collection-settings.js';

export interface TokenizedText {
  /** Each term and the times it occurs. */
  counts: Map<string, number>;
  /** Tokens in the text: FTS5's size of it. */
  tokens: number;
}

interface Tokenizer {
  insert: Statement;
  instances: Statement;
  clear: Statement;
}

export class FtsTokenizers {
  private readonly byTokenizer = new Map<string, Tokenizer>();

  constructor(private readonly db: Database.Database) {}

  /** Each of `texts` as FTS5 tokenizes it with `tokenizer` (one of TOKENIZERS). */
  tokenize(tokenizer: string, texts: readonly string[]): TokenizedText[] {
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
