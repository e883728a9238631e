/**
 * Searches answered from the top-k lists (topk-index.ts) without sort: their best rows by bm25,
 * read from the terms' lists instead of ranking every match. Scores are bm25() as FTS5 computes
 * it (fts5_aux.c), with the table's statistics as FTS5 keeps them (fts-stats.ts).
 *
 * One word: its stream (topk-stream.ts) yields the rows in the search's own order, so the first
 * `depth` are the answer: postings decoded are about depth plus one a run, whatever the matches.
 *
 * Several words, all of them (AND) or any (OR), one listed at least: the threshold algorithm
 * over the words' streams (a word without a list, in few rows, read whole from FTS5 and sorted in
 * memory: topk-source.ts). The row with the best part of any stream is taken next and scored
 * whole (its frequency of each other word looked up in that word's runs), and the search stops
 * once its `depth`-th best row scores above what any row not yet taken could: the sum of the
 * streams' heads (for AND, nothing once a stream is done). Summed in the query's order of words,
 * as bm25() sums its phrases, and rounding never makes a sum of smaller parts larger, so the
 * bound holds bit for bit. MaxScore's two prunings keep a common word from costing its matches:
 * once the `depth`-th best scores above the sum of some streams' heads, a row holding only those
 * words cannot enter, so rows are taken from the other streams only; and a row is scored only as
 * far as it could still enter (each word looked up while the row's best possible score, its
 * parts found and the most each word left could add, reaches the `depth`-th best).
 *
 * With a filter (RowFilter): the rows are taken as above, in batches, and those the filter does
 * not pass are dropped before they are scored; the search stops as it would without the filter.
 * Worth it only while the filter passes enough rows: the lists answer when the postings they
 * expect to read (depth over the filter's share) are few beside the matches FTS5 would walk.
 */
import type Database from 'better-sqlite3';
import type { Statement } from 'better-sqlite3';
import { FtsStats } from './fts-stats.js';
import { partitionOfRow, type FtsTable } from './fts-table.js';
import { FtsTokenizers } from './fts-tokens.js';
import { hasTopkLists } from './topk-index.js';
import { RemovedRows, type RemovedRowsOf } from './topk-removed.js';
import { documentFrequencyStatement, FtsPostings } from './topk-source.js';
import {
  before,
  bm25Idf,
  MemoryStream,
  prepareStreamStatements,
  TermStream,
  type StreamHead,
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
  /** With a filter: rows tested against it, and those it passed. */
  filtered?: { tested: number; passed: number };
}

/**
 * The rows a search of words can match at most, and the table's rows: what a plan is chosen by.
 * The matches are the sum of the words' rows for OR (and one word), the fewest for AND.
 */
export interface TopkMatches {
  matches: number;
  rows: number;
}

/**
 * A search by the lists: what they `found` (null: they do not answer it), and its matches where
 * its texts are terms of a table with lists (null: they are not, or were not counted, the search
 * having no filter to read by them and no list to answer it).
 */
export type TopkSearch =
  { found: TopkFound; walked: TopkMatches } | { found: null; walked: TopkMatches | null };

/** A search's filter, tested on the rows the lists yield (search-reads.ts). */
export interface RowFilter {
  /** Of `rows`, those the filter passes. */
  passing(rows: readonly number[]): ReadonlySet<number>;
  /**
   * The share of the table's `rows` the filter passes, estimated (filter-share.ts), counted far
   * enough to tell whether it reaches `shareMin`.
   */
  share(shareMin: number, rows: number): number;
}

/** Words a list search takes: all of them (AND) or any (OR). */
export interface TopkWords {
  texts: readonly string[];
  all: boolean;
}

/**
 * Rows a filtered search may expect to take, depth over the filter's share, at most for each
 * match FTS5 would walk (TopkMatches). One word: a row taken and probed in the field index
 * costs about 0.7 us, where FTS5 walks a match, probes it and ranks it in about 2 us. Several: a
 * row taken costs lookups of the other words besides, and a filter lowers the depth-th best
 * score the prunings stop at, so rows taken grow faster than depth over the share (measured at
 * 10^5 documents, two common words: a 5% filter 17.5 ms by the lists, 26.8 ms by FTS5; a 0.1%
 * filter 73 and 13 ms).
 */
const FILTERED_ROWS_PER_MATCH_MAX = { one: 0.25, several: 0.02 };
/** Rows a filter is asked about at once: the first batch twice the depth, each the last's double. */
const FILTER_BATCH_ROWS_MAX = 1_024;

/**
 * A word's rows among the rows of others, where FTS5 finds them for less than looking the word
 * up in its list for each (null: it does not), so only the rows holding it are looked up.
 */
type PresenceOf = (word: WordStream, among: readonly WordStream[]) => ReadonlySet<number> | null;
/**
 * FTS5 finds a word's rows among others' when those are at most this many for each of its: it
 * walks the others' rows and seeks through the word's, 0.6 to 5 us a row walked (at 10^5
 * documents: 458 rows among a common word's 35,000 in 0.27 ms, a common word's 20,000 among
 * another's in about 100 ms), where a lookup in a list decodes a block of each of the word's
 * runs, and its whole list costs about 0.3 us a row.
 */
const PRESENCE_AMONG_ROWS_PER_ROW_MAX = 1 / 16;

/** A word of a search: its term, its rows, and its list (null: it has none). */
interface Word {
  term: string;
  termId: number | null;
  df: number;
}

/** A word as `topk_terms` knows it: its rows only where it is listed there (null: uncounted). */
type Term = Omit<Word, 'df'> & { df: number | null };

export class TopkReads {
  private readonly tokenizers: FtsTokenizers;
  private readonly stats = new Map<string, FtsStats>();
  /**
   * By table name, not object: a read thread's tables are new objects after every commit
   * (search-store.ts followWriter); with the weights they were made for, replaced when a name
   * comes with others (kept by name and weights, every weighting a table ever had stayed).
   */
  private readonly postings = new Map<string, { weights: string; postings: FtsPostings }>();
  /** By table name, as `stats`. */
  private readonly matches = new Map<string, Statement>();
  /** By table name, as `stats`: a term's rows do not follow the weights. */
  private readonly frequencies = new Map<string, Statement>();
  private readonly streams: StreamStatements;
  private readonly removed: RemovedRows;
  /**
   * By table object (an id given again comes with another): its removed rows as of the commit
   * `stamp` names (write-stamp.ts), shared by the searches until another commit.
   */
  private readonly removedOf = new WeakMap<FtsTable, { stamp: number; rows: RemovedRowsOf }>();
  private readonly statements: Record<'settings' | 'term', Statement>;

  constructor(
    private readonly db: Database.Database,
    /** Moves with every commit the connection sees (SearchReads' write stamp). */
    private readonly stamp: () => number,
  ) {
    this.tokenizers = new FtsTokenizers(db);
    this.streams = prepareStreamStatements(db);
    this.removed = new RemovedRows(db);
    this.statements = {
      settings: db.prepare('SELECT listed_df_min FROM topk_settings WHERE id = 0').pluck(),
      term: db.prepare('SELECT id, df FROM topk_terms WHERE table_id = ? AND term = ?').raw(),
    };
  }

  /**
   * The best `depth` rows of `words` in `partitions` (null: all), or found null when no list
   * answers them: a text is not one token of the table's tokenizer, or no term is listed.
   */
  search(
    table: FtsTable,
    words: TopkWords,
    depth: number,
    partitions: ReadonlySet<number> | null,
    filter: RowFilter | null = null,
  ): TopkSearch {
    const declined = (walked: TopkMatches | null): TopkSearch => ({ found: null, walked });
    const listedDfMin = this.listedDfMin(table, words);
    if (listedDfMin === null) return declined(null);
    const terms = this.termsOf(table, words.texts, listedDfMin);
    if (terms === null) return declined(null);
    // Words without a list are read whole from FTS5: cheap beside a listed word, and FTS5's
    // answer to words that are all of them, whose rows only a filter's plan needs.
    const listed = terms.some(({ termId }) => termId !== null);
    if (!listed && filter === null) return declined(null);
    const found = this.counted(table, terms);
    const totals = this.statsOf(table).totals();
    const walked = { matches: matchesAtMost(found, words.all), rows: totals.rows };
    if (!listed) return declined(walked);
    if (words.all && !denseEnough(found, totals.rows)) return declined(walked);
    let tested: Tested | null = null;
    if (filter !== null) {
      const perMatch = FILTERED_ROWS_PER_MATCH_MAX[found.length === 1 ? 'one' : 'several'];
      const shareMin = depth / (walked.matches * perMatch);
      const share = shareMin > 1 ? 0 : filter.share(shareMin, totals.rows);
      if (share < shareMin) return declined(walked);
      tested = {
        filter,
        batchRows: Math.min(depth * 2, FILTER_BATCH_ROWS_MAX),
        tested: 0,
        passed: 0,
      };
    }
    const avgdl = totals.tokens / totals.rows;
    // One stream a distinct term; a word given twice counts twice, as bm25() counts phrases.
    const byTerm = new Map<string, WordStream>();
    const removed = this.removedRowsOf(table);
    const streams = found.map(({ term, termId, df }) => {
      let stream = byTerm.get(term);
      if (stream === undefined) {
        const idf = bm25Idf(totals.rows, df);
        stream =
          termId === null
            ? new MemoryStream(this.postingsOf(table).postingsOf(term), idf, avgdl, partitions)
            : new TermStream(this.streams, termId, df, idf, avgdl, partitions, removed);
        byTerm.set(term, stream);
      }
      return stream;
    });
    const texts = new Map<WordStream, { text: string; df: number }>();
    streams.forEach((stream, i) => {
      if (!texts.has(stream)) texts.set(stream, { text: words.texts[i], df: found[i].df });
    });
    const presenceOf: PresenceOf = (word, among) => {
      const { text, df } = texts.get(word)!;
      const others = among.map((stream) => texts.get(stream)!);
      const amongRows = others.reduce((sum, other) => sum + other.df, 0);
      if (!(word instanceof TermStream) || amongRows > df * PRESENCE_AMONG_ROWS_PER_ROW_MAX) {
        return null;
      }
      const quoted = (text: string) => `"${text.replaceAll('"', '""')}"`;
      const match = `(${others.map((other) => quoted(other.text)).join(' OR ')}) AND ${quoted(text)}`;
      return new Set(this.matchRows(table).all(match) as number[]);
    };
    const rows =
      byTerm.size === 1 && streams.length === 1
        ? oneWord(streams[0], depth, tested)
        : threshold(streams, [...byTerm.values()], words.all, depth, tested, presenceOf);
    let examined = 0;
    for (const stream of byTerm.values()) examined += stream.examined;
    // The lists hold every match, not those the filter passes: FTS5 counts those.
    const count = tested === null ? countRows([...byTerm.values()], words.all, partitions) : null;
    return {
      found: {
        rows,
        dfs: found.map(({ df }) => df),
        examined,
        ...(count === null ? {} : { count }),
        ...(tested === null ? {} : { filtered: { tested: tested.tested, passed: tested.passed } }),
      },
      walked,
    };
  }

  /** The matches of `words` (TopkMatches), or null where its texts are not terms with lists. */
  matchesOf(table: FtsTable, words: TopkWords): TopkMatches | null {
    const listedDfMin = this.listedDfMin(table, words);
    const terms = listedDfMin === null ? null : this.termsOf(table, words.texts, listedDfMin);
    if (terms === null) return null;
    const found = this.counted(table, terms);
    return { matches: matchesAtMost(found, words.all), rows: this.statsOf(table).totals().rows };
  }

  /** The least rows of a listed term, or null where the table has no lists or `words` none. */
  private listedDfMin(table: FtsTable, words: TopkWords): number | null {
    if (!hasTopkLists(table) || words.texts.length === 0) return null;
    return (this.statements.settings.get() as number | undefined) ?? null;
  }

  /**
   * The one term FTS5 makes of each text, with its list's id and rows where it has one (in at
   * least `listedDfMin` rows), read from `topk_terms` alone; null when a text is not one term.
   */
  private termsOf(table: FtsTable, texts: readonly string[], listedDfMin: number): Term[] | null {
    const terms: Term[] = [];
    for (const tokenized of this.tokenizers.tokenize(table.settings.tokenizer, texts)) {
      if (tokenized.tokens !== 1) return null;
      const [term] = tokenized.counts.keys();
      const stored = this.statements.term.get(table.id, term) as [number, number] | undefined;
      const listed = stored !== undefined && stored[1] >= listedDfMin;
      terms.push({ term, termId: listed ? stored[0] : null, df: stored?.[1] ?? null });
    }
    return terms;
  }

  /**
   * `terms` with their rows: only listed terms have a row in `topk_terms` (topk-index.ts), FTS5
   * counts another's few rows quickly.
   */
  private counted(table: FtsTable, terms: readonly Term[]): Word[] {
    return terms.map(({ term, termId, df }) => ({
      term,
      termId,
      df: df ?? this.documentFrequency(table, term),
    }));
  }

  /** The rows holding `term` (0: none), counted by FTS5. */
  private documentFrequency(table: FtsTable, term: string): number {
    let statement = this.frequencies.get(table.name);
    if (statement === undefined) {
      statement = documentFrequencyStatement(this.db, table.name);
      this.frequencies.set(table.name, statement);
    }
    return (statement.get(term) as number | undefined) ?? 0;
  }

  /** The rows of a MATCH of the table, in no order, without ranking them. */
  private matchRows(table: FtsTable): Statement {
    let statement = this.matches.get(table.name);
    if (statement === undefined) {
      statement = this.db
        .prepare(`SELECT rowid FROM ${table.name} WHERE ${table.name} MATCH ?`)
        .pluck();
      this.matches.set(table.name, statement);
    }
    return statement;
  }

  /** The table's removed rows as of the commit read, kept until the next. */
  private removedRowsOf(table: FtsTable): RemovedRowsOf {
    const stamp = this.stamp();
    let kept = this.removedOf.get(table);
    if (kept === undefined || kept.stamp !== stamp) {
      kept = { stamp, rows: this.removed.of(table.id) };
      this.removedOf.set(table, kept);
    }
    return kept.rows;
  }

  private postingsOf(table: FtsTable): FtsPostings {
    const weights = table.layout.weights.join(' ');
    const held = this.postings.get(table.name);
    if (held !== undefined && held.weights === weights) return held.postings;
    const postings = new FtsPostings(this.db, table);
    this.postings.set(table.name, { weights, postings });
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

/** The rows a search of `words` can match at most (TopkMatches). */
function matchesAtMost(words: readonly Word[], all: boolean): number {
  const dfs = words.map(({ df }) => df);
  return all ? Math.min(...dfs) : dfs.reduce((sum, df) => sum + df, 0);
}

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

/** A search's filter, the size of its next batch, and what it was asked so far. */
interface Tested {
  filter: RowFilter;
  batchRows: number;
  tested: number;
  passed: number;
}

/** The rows of `heads` the filter passes (all without one), the next batch made larger. */
function passing(heads: readonly StreamHead[], tested: Tested | null): ReadonlySet<number> | null {
  if (tested === null) return null;
  const passed = tested.filter.passing(heads.map(({ row }) => row));
  tested.tested += heads.length;
  tested.passed += passed.size;
  tested.batchRows = Math.min(tested.batchRows * 2, FILTER_BATCH_ROWS_MAX);
  return passed;
}

/** One word's best rows: its stream's first `depth` (that the filter passes). */
function oneWord(stream: WordStream, depth: number, tested: Tested | null): TopkRow[] {
  const rows: TopkRow[] = [];
  while (rows.length < depth) {
    const heads: StreamHead[] = [];
    const batch = tested === null ? depth - rows.length : tested.batchRows;
    for (let head = stream.take(); head !== null; head = stream.take()) {
      heads.push(head);
      if (heads.length === batch) break;
    }
    if (heads.length === 0) break;
    const passed = passing(heads, tested);
    for (const { row, partition, score } of heads) {
      if (rows.length === depth) break;
      if (passed === null || passed.has(row)) rows.push({ row, partition, score });
    }
  }
  return rows;
}

/**
 * The best `depth` rows of several words (`streams[i]` the stream of the query's i-th word;
 * `distinct` each stream once), by the threshold algorithm with MaxScore's prunings (the file's
 * comment).
 */
function threshold(
  streams: readonly WordStream[],
  distinct: readonly WordStream[],
  all: boolean,
  depth: number,
  tested: Tested | null,
  presenceOf: PresenceOf,
): TopkRow[] {
  const top: TopkRow[] = [];
  const taken = new Set<number>();
  /**
   * Streams left out of the essential ones, for good: their heads stay (no row is taken from
   * them) while the depth-th best only rises. Rows are taken only from essential streams, so a
   * word's rows among those of the essential streams of the moment it is first looked up outside
   * them hold every row it is looked up in from then on.
   */
  const left = new Set<WordStream>();
  const presence = new Map<WordStream, ReadonlySet<number> | null>();
  let essential = distinct;
  const lookup: Lookup = (stream, row, len, worth) => {
    if (!essential.includes(stream)) {
      if (!presence.has(stream)) presence.set(stream, presenceOf(stream, essential));
      if (presence.get(stream)?.has(row) === false) return null;
    }
    return stream.frequencyIn(row, len, worth);
  };
  for (;;) {
    const least = top.length === depth ? top[depth - 1].score : -Infinity;
    essential = essentialStreams(streams, distinct, least, left);
    const batch: Array<{ head: StreamHead; from: WordStream }> = [];
    while (batch.length < (tested?.batchRows ?? 1)) {
      let from: WordStream | null = null;
      for (const stream of essential) {
        const head = stream.head();
        if (head !== null && (from === null || before(head, from.head()!))) from = stream;
      }
      if (from === null) break;
      const head = from.take()!;
      if (taken.has(head.row)) continue;
      taken.add(head.row);
      batch.push({ head, from });
    }
    if (batch.length === 0) break;
    const passed = passing(
      batch.map(({ head }) => head),
      tested,
    );
    for (const { head, from } of batch) {
      if (passed !== null && !passed.has(head.row)) continue;
      const least = top.length === depth ? top[depth - 1].score : -Infinity;
      const score = scoreOf(head, from, streams, all, least, lookup);
      if (score !== null) insert(top, { row: head.row, partition: head.partition, score }, depth);
    }
    if (top.length === depth && top[depth - 1].score > bound(streams, all)) break;
  }
  return top;
}

/** A word's frequency in a row, as WordStream.frequencyIn. */
type Lookup = (
  stream: WordStream,
  row: number,
  len: number,
  worth: (tf: number) => boolean,
) => number | null;

/**
 * Scores a parts sum may differ by from the same parts summed in another order: far below any
 * two scores' difference that matters (1e-9), far above a few roundings of sums of a few parts.
 */
const PRUNE_MARGIN = 1e-12;

/**
 * The streams rows must still be taken from: all but those `left` out, to which streams are
 * added, the smallest heads first, while their heads summed in the query's order come below
 * `least` (a row holding only their words cannot enter).
 */
function essentialStreams(
  streams: readonly WordStream[],
  distinct: readonly WordStream[],
  least: number,
  left: Set<WordStream>,
): readonly WordStream[] {
  if (least === -Infinity) return distinct;
  const headScore = (stream: WordStream) => stream.head()?.score ?? 0;
  const candidates = distinct.filter((stream) => !left.has(stream));
  for (const stream of candidates.sort((a, b) => headScore(a) - headScore(b))) {
    left.add(stream);
    let sum = 0;
    for (const each of streams) if (left.has(each)) sum += headScore(each);
    if (!(sum < least)) {
      left.delete(stream);
      break;
    }
  }
  return distinct.filter((stream) => !left.has(stream));
}

/**
 * The score of `head`'s row (taken from `from`), summed in the query's order; null when it holds
 * not every word of an AND, or when it cannot score `least` (the depth-th best) or above: the
 * other words looked up one at a time while the most the row could score still reaches it.
 */
function scoreOf(
  head: StreamHead,
  from: WordStream,
  streams: readonly WordStream[],
  all: boolean,
  least: number,
  lookup: Lookup,
): number | null {
  const frequencies = new Map<WordStream, number | null>([[from, null]]);
  const others = [...new Set(streams)].filter((stream) => stream !== from);
  /** The most the row can score with the words not yet looked up at their most, `trying` at `tf`. */
  const most = (trying?: WordStream, tf?: number) => {
    let sum = 0;
    for (const stream of streams) {
      if (stream === from) sum += head.score;
      else if (stream === trying) sum += stream.part(tf!, head.len);
      else if (!frequencies.has(stream)) sum += stream.partMax(head.len);
      else if (frequencies.get(stream) !== null)
        sum += stream.part(frequencies.get(stream)!, head.len);
    }
    return sum;
  };
  const reaches = (sum: number) => sum >= least * (1 - PRUNE_MARGIN);
  for (const stream of others) {
    if (!reaches(most())) return null;
    const tf = lookup(stream, head.row, head.len, (tf) => reaches(most(stream, tf)));
    if (tf === null && all) return null;
    frequencies.set(stream, tf);
  }
  let score = 0;
  for (const stream of streams) {
    if (stream === from) score += head.score;
    else {
      const tf = frequencies.get(stream)!;
      if (tf !== null) score += stream.part(tf, head.len);
    }
  }
  return reaches(score) ? score : null;
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
