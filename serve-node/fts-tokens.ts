/**
 * Texts tokenized as FTS5 tokenizes them, so the terms the top-k lists (topk-index.ts) hold and
 * look up are exactly those of the collection's table whatever its tokenizer. Under unicode61 a
 * text is cut here: unicode61 takes the ASCII letters and digits as token characters (the
 * categories L* and N*), every other ASCII character as a separator, and lowers A-Z, with
 * nothing else to it (test/unit/fts-tokens.test.ts checks every ASCII character and seeded texts
 * against FTS5), so a run of ASCII letters and digits between ASCII separators is a token, and
 * only the runs holding other characters (an accented name in an English text) go through FTS5
 * itself, as every text of another tokenizer does: into a temporary contentless FTS5 table of
 * that tokenizer and back out of an fts5vocab 'instance' table over it, then one 'delete-all'
 * clears it (about 40% of a write's cost of the lists when every text took that way; 15% when a
 * text with one such character went whole). Temporary tables belong to the connection, so each
 * connection (each thread's handle) tokenizes on its own.
 */
import type Database from 'better-sqlite3';
import type { Statement } from 'better-sqlite3';
import { assert } from '../shared/assert.js';
import { TOKENIZERS } from './collection-settings.js';

export interface TokenizedText {
  /** Each term and the times it occurs, in no particular order. */
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
const FIRST_NOT_ASCII = 0x80;
/** 1 for the ASCII characters unicode61 takes into tokens: letters and digits. */
const ASCII_TOKEN_CHAR = Uint8Array.from({ length: FIRST_NOT_ASCII }, (_, c) =>
  /[A-Za-z0-9]/.test(String.fromCharCode(c)) ? 1 : 0,
);
/**
 * FTS5_MAX_TOKEN_SIZE: FTS5 indexes a longer token's first bytes only; a text with one goes
 * through FTS5 rather than copy that rule.
 */
const TOKEN_BYTES_MAX = 32_768;

/**
 * A text cut where unicode61 always cuts, at its ASCII separators: `token(start, end)` for each
 * run of ASCII letters and digits (one token), and the runs holding another character, left for
 * FTS5, answered (as many times as each occurs). Null where an ASCII run is past FTS5's token
 * size.
 */
function scanText(text: string, token: (start: number, end: number) => void): string[] | null {
  const others: string[] = [];
  let start = -1;
  let ascii = true;
  // A loop over char codes, not a regular expression's matches: a write tokenizes every text
  // it indexes, and the matches' arrays were a fifth of a write's cost of the lists.
  for (let i = 0; i <= text.length; i++) {
    const c = i < text.length ? text.charCodeAt(i) : 0;
    if (c >= FIRST_NOT_ASCII || ASCII_TOKEN_CHAR[c] === 1) {
      if (start < 0) [start, ascii] = [i, true];
      if (c >= FIRST_NOT_ASCII) ascii = false;
      continue;
    }
    if (start < 0) continue;
    if (!ascii) others.push(text.slice(start, i));
    else if (i - start > TOKEN_BYTES_MAX) return null;
    else token(start, i);
    start = -1;
  }
  return others;
}

/** Each ASCII token of a text counted, lowered; the runs left for FTS5 (scanText). */
function splitText(text: string): (TokenizedText & { others: string[] }) | null {
  const counts = new Map<string, number>();
  let tokens = 0;
  const others = scanText(text, (start, end) => {
    const term = text.slice(start, end).toLowerCase();
    counts.set(term, (counts.get(term) ?? 0) + 1);
    tokens += 1;
  });
  return others === null ? null : { counts, tokens, others };
}

/** Numbers terms for tokenizeIds: the top-k lists' writer's (topk-term-ids.ts). */
export interface TermNumbering {
  /** The number of `text[start..end)` lowered, an ASCII token. */
  idOfAscii(text: string, start: number, end: number): number;
  idOf(term: string): number;
}

export class FtsTokenizers {
  private readonly byTokenizer = new Map<string, Tokenizer>();

  constructor(private readonly db: Database.Database) {}

  /** Each of `texts` as FTS5 tokenizes it with `tokenizer` (one of TOKENIZERS). */
  tokenize(tokenizer: string, texts: readonly string[]): TokenizedText[] {
    if (tokenizer !== UNICODE61) return this.tokenizeByFts5(tokenizer, texts);
    const split = texts.map(splitText);
    const ofRun = this.runsByFts5(
      tokenizer,
      split.map((text) => (text === null ? null : text.others)),
      texts,
    );
    return split.map((text, i) => {
      if (text === null) return ofRun.get(texts[i])!;
      for (const run of text.others) {
        const tokenized = ofRun.get(run)!;
        for (const [term, n] of tokenized.counts)
          text.counts.set(term, (text.counts.get(term) ?? 0) + n);
        text.tokens += tokenized.tokens;
      }
      return { counts: text.counts, tokens: text.tokens };
    });
  }

  /**
   * Each of `texts` as tokenize() cuts it, as its tokens' numbers (one a token, in no particular
   * order; its length is FTS5's size of the text): an ASCII token is numbered from the text,
   * with no string cut from it.
   */
  tokenizeIds(tokenizer: string, texts: readonly string[], terms: TermNumbering): number[][] {
    const byFts5 = (text: TokenizedText, into: number[]) => {
      for (const [term, n] of text.counts) {
        const id = terms.idOf(term);
        for (let k = 0; k < n; k++) into.push(id);
      }
      return into;
    };
    if (tokenizer !== UNICODE61) {
      return this.tokenizeByFts5(tokenizer, texts).map((text) => byFts5(text, []));
    }
    const ids: number[][] = [];
    const others = texts.map((text) => {
      const ofText: number[] = [];
      ids.push(ofText);
      return scanText(text, (start, end) => ofText.push(terms.idOfAscii(text, start, end)));
    });
    const ofRun = this.runsByFts5(tokenizer, others, texts);
    others.forEach((runs, i) => {
      if (runs === null) {
        ids[i] = byFts5(ofRun.get(texts[i])!, []);
        return;
      }
      for (const run of runs) byFts5(ofRun.get(run)!, ids[i]);
    });
    return ids;
  }

  /**
   * The runs FTS5 must tokenize (`others[i]`, or the whole of `texts[i]` where null), each
   * distinct run once, by run.
   */
  private runsByFts5(
    tokenizer: string,
    others: ReadonlyArray<readonly string[] | null>,
    texts: readonly string[],
  ): Map<string, TokenizedText> {
    const runs = new Set<string>();
    others.forEach((ofText, i) => {
      if (ofText === null) runs.add(texts[i]);
      else for (const run of ofText) runs.add(run);
    });
    const distinct = [...runs];
    const byFts5 = this.tokenizeByFts5(tokenizer, distinct);
    return new Map(distinct.map((run, i) => [run, byFts5[i]]));
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
