/**
 * A user's search query turned into FTS5 syntax that cannot be misread: every term and phrase is
 * emitted as an FTS5 string ("..." with quotes doubled), so FTS5 operators, column filters and
 * punctuation in the input are only ever text. Supported: terms (AND), "phrases", prefix*,
 * -exclusion, OR (upper case) between alternatives.
 */
import { badRequest } from '../shared/errors.js';
import type { TopkWords } from './topk-reads.js';

export interface QueryLimits {
  queryBytesMax: number;
  queryTermsMax: number;
}

export interface ParsedQuery {
  /** The FTS5 MATCH expression. */
  match: string;
  /** The positive items joined by OR: what highlights mark in each field. */
  highlightMatch: string;
  /**
   * The query's items when they are words all of which (one group) or any of which (groups of
   * one) a row must hold, with no exclusion or prefix: what the top-k lists may answer
   * (topk-reads.ts) when the table tokenizes each to one term. In the query's order, which is
   * bm25()'s order of phrases.
   */
  words: TopkWords | null;
}

interface Item {
  text: string;
  prefix: boolean;
  negated: boolean;
}

const CONTROL = /[\u0000-\u001f\u007f]/g;
const WORDLIKE = /[\p{L}\p{N}]/u;

export function parseQuery(q: string, limits: QueryLimits): ParsedQuery {
  if (Buffer.byteLength(q) > limits.queryBytesMax) {
    throw badRequest('invalid_query', `query exceeds ${limits.queryBytesMax} bytes`, {
      limit: 'queryBytesMax',
      max: limits.queryBytesMax,
    });
  }
  const groups = splitGroups(tokenize(q.replace(CONTROL, ' ')));
  const itemCount = groups.reduce((sum, group) => sum + group.length, 0);
  if (itemCount > limits.queryTermsMax) {
    throw badRequest('invalid_query', `query has more than ${limits.queryTermsMax} terms`, {
      limit: 'queryTermsMax',
      max: limits.queryTermsMax,
    });
  }
  const expressions: string[] = [];
  const positives: string[] = [];
  for (const group of groups) {
    const include = group.filter((item) => !item.negated).map(ftsString);
    const exclude = group.filter((item) => item.negated).map(ftsString);
    if (include.length === 0) {
      throw badRequest('invalid_query', 'an exclusion needs a term to exclude from');
    }
    positives.push(...include);
    const all = include.join(' AND ');
    expressions.push(
      exclude.length === 0 ? `(${all})` : `((${all}) NOT (${exclude.join(' OR ')}))`,
    );
  }
  if (expressions.length === 0) {
    throw badRequest('invalid_query', 'the query has no words to search for');
  }
  return {
    match: expressions.join(' OR '),
    highlightMatch: positives.join(' OR '),
    words: wordsOf(groups),
  };
}

/** The items as TopkWords: one group (AND) or groups of one (OR) of plain items. */
function wordsOf(groups: Item[][]): TopkWords | null {
  const items = groups.flat();
  if (items.some((item) => item.prefix || item.negated)) return null;
  const texts = items.map((item) => item.text);
  if (groups.length === 1) return { texts, all: true };
  return groups.every((group) => group.length === 1) ? { texts, all: false } : null;
}

type Token = Item | 'OR';

function tokenize(q: string): Token[] {
  const tokens: Token[] = [];
  let at = 0;
  while (at < q.length) {
    if (/\s/.test(q[at])) {
      at++;
      continue;
    }
    let negated = false;
    if (q[at] === '-') {
      negated = true;
      at++;
    }
    if (q[at] === '"') {
      // An unbalanced quote runs to the end of the query rather than failing it.
      const close = q.indexOf('"', at + 1);
      const end = close < 0 ? q.length : close;
      const text = q.slice(at + 1, end);
      at = end + 1;
      const prefix = q[at] === '*';
      if (prefix) at++;
      tokens.push({ text, prefix, negated });
      continue;
    }
    let end = at;
    while (end < q.length && !/\s/.test(q[end]) && q[end] !== '"') end++;
    const word = q.slice(at, end);
    at = end;
    if (word === 'OR' && !negated) {
      tokens.push('OR');
      continue;
    }
    const prefix = word.endsWith('*');
    tokens.push({ text: word.replace(/\*+$/, ''), prefix, negated });
  }
  return tokens;
}

/** Splits at OR; drops items without a letter or digit, which no tokenizer would index as words. */
function splitGroups(tokens: Token[]): Item[][] {
  const groups: Item[][] = [[]];
  for (const token of tokens) {
    if (token === 'OR') groups.push([]);
    else if (WORDLIKE.test(token.text)) groups[groups.length - 1].push(token);
  }
  return groups.filter((group) => group.length > 0);
}

function ftsString(item: Item): string {
  const quoted = `"${item.text.replace(/"/g, '""')}"`;
  return item.prefix ? `${quoted} *` : quoted;
}
