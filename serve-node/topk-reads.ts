/**
 * Searches answered from the top-k lists (topk-index.ts) without filter or sort: their best rows
 * by bm25, read from the terms' lists instead of ranking every match. Scores are bm25() as FTS5
 * computes it (fts5_aux.c), with the table's statistics as FTS5 keeps them (fts-stats.ts).
 *
 * One word: its stream (topk-stream.ts) yields the rows in the search's own order, so the first
 * `depth` are the answer: postings decoded are about depth plus one a run, whatever the matches.
 *
 * Several words, all of them (AND) or any (OR), one listed at least: the threshold algorithm
 * over the words' streams (a word without a list, in few rows, read whole from FTS5 and sorted in
 * memory: topk-source.ts). The row with the best part of any stream is taken next and scored whole (its
 * frequency of each other word looked up in that word's runs), and the search stops once its
 * `depth`-th best row scores above what any row not yet taken could: the sum of the streams'
 * heads (for AND, nothing once a stream is done). Summed in the query's order of words, as
 * bm25() sums its phrases, and rounding never makes a sum of smaller parts larger, so the bound
 * holds bit for bit.
 */
import type Database from 'better-sqlite3';
import type { Statement } from 'better-sqlite3';
import { FtsStats } from './fts-stats.js';
import { partitionOfRow, type FtsTable } from './fts-table.js';
import { FtsTokenizers } from './fts-tokens.js';
import { hasTopkLists } from './topk-index.js';
import { FtsPostings } from './topk-source.js';
import {
  before,
  bm25Idf,
  MemoryStream,
  prepareStreamStatements,
  TermStream,
  type StreamStatements,
  type WordStream,
  type TopkRow,
} from './topk-stream.js';

export interface TopkFound {
  /** The best rows, best first. */
  rows: TopkRow[];
  /** Rows of the table holding each word, in every partition, in the query's order. */
  dfs: number[];
  /** Postings decoded from the lists' blocks: what the search's cost follows. */
  examined: number;
  /** The matches in the partitions searched, where the words' whole lists were decoded. */
  count?: number;
}

/** Words a list search takes: all of them (AND) or any (OR). */
export interface TopkWords {
  texts: readonly string[];
  all: boolean;
}

/** A word of a search: its term, its rows, and its list (null: it has none). */
interface Word {
  term: string;
  termId: number | null;
  df: number;
}

export class TopkReads {
  private readonly tokenizers: FtsTokenizers;
  private readonly stats = new Map<string, FtsStats>();
  /** By table object, not name: a name given again may come with other weights. */
  private readonly postings = new WeakMap<FtsTable, FtsPostings>();
  private readonly streams: StreamStatements;
  private readonly statements: Record<'settings' | 'term', Statement>;

  constructor(private readonly db: Database.Database) {
    this.tokenizers = new FtsTokenizers(db);
    this.streams = prepareStreamStatements(db);
    this.statements = {
      settings: db.prepare('SELECT listed_df_min FROM topk_settings WHERE id = 0').pluck(),
      term: db.prepare('SELECT id, df FROM topk_terms WHERE table_id = ? AND term = ?').raw(),
    };
  }

  /**
   * The best `depth` rows of `words` in `partitions` (null: all), or null when no list answers
   * them: a text is not one token of the table's tokenizer, or its term is not listed.
   */
  search(
    table: FtsTable,
    words: TopkWords,
    depth: number,
    partitions: ReadonlySet<number> | null,
  ): TopkFound | null {
    if (!hasTopkLists(table) || words.texts.length === 0) return null;
    const listedDfMin = this.statements.settings.get() as number | undefined;
    if (listedDfMin === undefined) return null;
    const found: Word[] = [];
    for (const text of words.texts) {
      const word = this.word(table, text, listedDfMin);
      if (word === null) return null;
      found.push(word);
    }
    // Words without a list are read whole from FTS5: cheap beside a listed word, and FTS5's
    // answer to words that are all of them.
    if (found.every((word) => word.termId === null)) return null;
    const totals = this.statsOf(table).totals();
    if (words.all && !denseEnough(found, totals.rows)) return null;
    const avgdl = totals.tokens / totals.rows;
    // One stream a distinct term; a word given twice counts twice, as bm25() counts phrases.
    const byTerm = new Map<string, WordStream>();
    const streams = found.map(({ term, termId, df }) => {
      let stream = byTerm.get(term);
      if (stream === undefined) {
        const idf = bm25Idf(totals.rows, df);
        stream =
          termId === null
            ? new MemoryStream(this.postingsOf(table).postingsOf(term), idf, avgdl, partitions)
            : new TermStream(this.streams, termId, df, idf, avgdl, partitions);
        byTerm.set(term, stream);
      }
      return stream;
    });
    const rows =
      byTerm.size === 1 && streams.length === 1
        ? oneWord(streams[0], depth)
        : threshold(streams, [...byTerm.values()], words.all, depth);
    let examined = 0;
    for (const stream of byTerm.values()) examined += stream.examined;
    const count = countRows([...byTerm.values()], words.all, partitions);
    return {
      rows,
      dfs: found.map(({ df }) => df),
      examined,
      ...(count === null ? {} : { count }),
    };
  }

  /**
   * The one term FTS5 makes of `text` and its rows, with its list's id where it has one (in at
   * least `listedDfMin` rows); null when `text` is not one term.
   */
  private word(table: FtsTable, text: string, listedDfMin: number): Word | null {
    const [tokenized] = this.tokenizers.tokenize(table.settings.tokenizer, [text]);
    if (tokenized.tokens !== 1) return null;
    const [term] = tokenized.counts.keys();
    const stored = this.statements.term.get(table.id, term) as [number, number] | undefined;
    // Only listed terms have a row (topk-index.ts); FTS5 counts another's few rows quickly.
    const df = stored?.[1] ?? this.postingsOf(table).documentFrequency(term);
    return { term, termId: stored !== undefined && df >= listedDfMin ? stored[0] : null, df };
  }

  private postingsOf(table: FtsTable): FtsPostings {
    let postings = this.postings.get(table);
    if (postings === undefined) {
      postings = new FtsPostings(this.db, table);
      this.postings.set(table, postings);
    }
    return postings;
  }

  private statsOf(table: FtsTable): FtsStats {
    let stats = this.stats.get(table.name);
    if (stats === undefined) {
      stats = new FtsStats(this.db, table.name);
      this.stats.set(table.name, stats);
    }
    return stats;
  }
}

/**
 * Matches of an AND a posting of its words' lists must find, at the least, for the lists to
 * answer it: ranking the words from their lists costs about their whole lists once the matches
 * are many (0.33 us a posting), where FTS5 costs about 2 us a match of all the words (measured
 * at 10^5 documents: two common words, 55,000 postings and 7,156 matches, 19 ms by the lists and
 * 14 ms by FTS5; any of them, 48,554 matches, 16 and 54 ms).
 */
const AND_MATCHES_PER_POSTING_MIN = 0.2;

/** Whether an AND's matches, estimated as if its words fell on rows independently, are many. */
function denseEnough(listed: readonly Word[], rows: number): boolean {
  let matches = rows;
  let postings = 0;
  for (const { df } of listed) {
    matches *= df / rows;
    postings += df;
  }
  return matches >= AND_MATCHES_PER_POSTING_MIN * postings;
}

/** One word's best rows: its stream's first `depth`. */
function oneWord(stream: WordStream, depth: number): TopkRow[] {
  const rows: TopkRow[] = [];
  while (rows.length < depth) {
    const head = stream.take();
    if (head === null) break;
    rows.push({ row: head.row, partition: head.partition, score: head.score });
  }
  return rows;
}

/**
 * The best `depth` rows of several words (`streams[i]` the stream of the query's i-th word;
 * `distinct` each stream once), by the threshold algorithm (the file's comment).
 */
function threshold(
  streams: readonly WordStream[],
  distinct: readonly WordStream[],
  all: boolean,
  depth: number,
): TopkRow[] {
  const top: TopkRow[] = [];
  const scored = new Set<number>();
  for (;;) {
    let from: WordStream | null = null;
    for (const stream of distinct) {
      const head = stream.head();
      if (head !== null && (from === null || before(head, from.head()!))) from = stream;
    }
    if (from === null) break;
    const head = from.take()!;
    if (!scored.has(head.row)) {
      scored.add(head.row);
      const frequencies = new Map<WordStream, number | null>();
      const frequency = (stream: WordStream) => {
        if (!frequencies.has(stream)) {
          frequencies.set(stream, stream === from ? null : stream.frequencyIn(head.row, head.len));
        }
        return frequencies.get(stream)!;
      };
      let score = 0;
      let missing = false;
      for (const stream of streams) {
        if (stream === from) {
          score += head.score;
          continue;
        }
        const tf = frequency(stream);
        if (tf === null) missing = true;
        else score += stream.part(tf, head.len);
      }
      if (!(all && missing))
        insert(top, { row: head.row, partition: head.partition, score }, depth);
    }
    if (top.length === depth && top[depth - 1].score > bound(streams, all)) break;
  }
  return top;
}

/** The most a row no stream has yielded yet can score: the heads summed in the query's order. */
function bound(streams: readonly WordStream[], all: boolean): number {
  let sum = 0;
  for (const stream of streams) {
    const head = stream.head();
    if (head === null && all) return -Infinity;
    if (head !== null) sum += head.score;
  }
  return sum;
}

/** `row` into `top` (best first, at most `depth`) where it belongs. */
function insert(top: TopkRow[], row: TopkRow, depth: number): void {
  let at = top.length;
  while (at > 0 && before(row, top[at - 1])) at--;
  if (at >= depth) return;
  top.splice(at, 0, row);
  if (top.length > depth) top.pop();
}

/**
 * The rows holding all (or any) of the words in `partitions`, counted from the whole lists
 * when the search decoded every one, else null.
 */
function countRows(
  streams: readonly WordStream[],
  all: boolean,
  partitions: ReadonlySet<number> | null,
): number | null {
  const lists = streams.map((stream) => stream.wholeList());
  if (streams.length < 2 || lists.some((list) => list === null)) return null;
  const maps = lists as Array<ReadonlyMap<number, number>>;
  const counted = (row: number) => partitions === null || partitions.has(partitionOfRow(row));
  let count = 0;
  if (all) {
    const [smallest, ...others] = [...maps].sort((a, b) => a.size - b.size);
    for (const row of smallest.keys()) {
      if (counted(row) && others.every((map) => map.has(row))) count += 1;
    }
    return count;
  }
  const seen = new Set<number>();
  for (const map of maps) {
    for (const row of map.keys()) if (counted(row)) seen.add(row);
  }
  return seen.size;
}
