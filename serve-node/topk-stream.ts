/**
 * One listed term's postings in a search's order (topk-index.ts, FORMAT.md): its runs, one a
 * weighted frequency, each in descending contribution, merged by their heads, so the rows come
 * best first and a search reads about as many postings as it takes. Also the other way in: a
 * given row's frequency of the term, by a seek into each run where the row's tokens and tie key
 * would put it (a block each, highest frequency first, stopping at the first run whose part of
 * the score would not matter), for the rows a multi-word search must score whole.
 */
import type Database from 'better-sqlite3';
import type { Statement } from 'better-sqlite3';
import { partitionOfRow } from './fts-table.js';
import { BlockReader, tieOf, type Posting } from './topk-blocks.js';
import type { RemovedRowsOf } from './topk-removed.js';

/** bm25()'s constants in fts5_aux.c. */
const K1 = 1.2;
const B = 0.75;

/** bm25()'s IDF: at least 1e-6, for a term in more than half the rows. */
export function bm25Idf(rows: number, df: number): number {
  const idf = Math.log((rows - df + 0.5) / (df + 0.5));
  return idf <= 0 ? 1e-6 : idf;
}

/** One phrase's part of bm25(), with the same operations in the same order as FTS5's. */
export function bm25Part(idf: number, tf: number, len: number, avgdl: number): number {
  return idf * ((tf * (K1 + 1.0)) / (tf + K1 * (1 - B + (B * len) / avgdl)));
}

export interface TopkRow {
  row: number;
  score: number;
  partition: number;
}

/** A row at a stream's head: its part of the score for this term, and its tokens. */
export interface StreamHead extends TopkRow {
  len: number;
}

/** True when `a` comes before `b` in a search's order (score, then partition, then row). */
export function before(a: TopkRow, b: TopkRow): boolean {
  if (a.score !== b.score) return a.score > b.score;
  if (a.partition !== b.partition) return a.partition < b.partition;
  return a.row < b.row;
}

/** A run of the list: the blocks of one segment and weighted frequency, best first. */
interface Run {
  segment: number;
  tf: number;
  /** The key of the block being read, for the next one's seek. */
  block: [number, number];
  reader: BlockReader | null;
  head: StreamHead | null;
  /** The block the last lookup in the run decoded: the next ones often fall in it too. */
  looked: LookedBlock | null;
}

/** A block's rows, and the keys (`len`, tie) of its first and last postings. */
interface LookedBlock {
  first: [number, number];
  last: [number, number];
  rows: Set<number>;
}

/** Whether key `a` (`len`, tie) comes after key `b`. */
const after = (a: readonly [number, number], b: readonly [number, number]) =>
  a[0] > b[0] || (a[0] === b[0] && a[1] > b[1]);

/** The statements a stream reads with, prepared once a connection (TopkReads). */
export interface StreamStatements {
  nextRun: Statement;
  nextBlock: Statement;
  floorBlock: Statement;
  wholeList: Statement;
}

export function prepareStreamStatements(db: Database.Database): StreamStatements {
  return {
    // A run's first block comes with its segment and frequency: one seek a run.
    nextRun: db
      .prepare(
        'SELECT segment, tf, len, tie, postings FROM topk_blocks WHERE term_id = ? ' +
          'AND (segment, tf) > (?, ?) ORDER BY segment, tf, len, tie LIMIT 1',
      )
      .raw(),
    nextBlock: db
      .prepare(
        'SELECT len, tie, postings FROM topk_blocks WHERE term_id = ? AND segment = ? ' +
          'AND tf = ? AND (len, tie) > (?, ?) ORDER BY len, tie LIMIT 1',
      )
      .raw(),
    floorBlock: db
      .prepare(
        'SELECT len, tie, postings FROM topk_blocks WHERE term_id = ? AND segment = ? ' +
          'AND tf = ? AND (len, tie) <= (?, ?) ORDER BY len DESC, tie DESC LIMIT 1',
      )
      .raw(),
    wholeList: prepareListBlocks(db),
  };
}

/** Every block of a term's list, each as [tf, postings]: for reading or dropping a list whole. */
export function prepareListBlocks(db: Database.Database): Statement {
  return db.prepare('SELECT tf, postings FROM topk_blocks WHERE term_id = ?').raw();
}

/** A word's rows best first, and a row's frequency of it: from its list, or from FTS5. */
export interface WordStream {
  /** Postings decoded or read: what a search's cost follows. */
  readonly examined: number;
  /** The best row not yet taken, or null when every row is. */
  head(): StreamHead | null;
  /** Takes the head. */
  take(): StreamHead | null;
  /**
   * The word's weighted frequency in `row` (of `len` tokens), or null where it has none or where
   * it is below every frequency `worth` takes (worth is true of a frequency and all above it).
   */
  frequencyIn(row: number, len: number, worth?: (tf: number) => boolean): number | null;
  /** The word's part of a row's score at this frequency. */
  part(tf: number, len: number): number;
  /** The most the word's part of a row of `len` tokens can be. */
  partMax(len: number): number;
  /** Every row's frequency of the word, where the stream holds it all, else null. */
  wholeList(): ReadonlyMap<number, number> | null;
}

/**
 * A word without a list (in fewer than `listedDfMin` rows) beside listed ones: its postings,
 * read whole from FTS5 (a few hundred at most, about 2 us each), sorted in memory.
 */
export class MemoryStream implements WordStream {
  readonly examined: number;
  private readonly heads: StreamHead[];
  private at = 0;
  private readonly byRow: Map<number, number>;
  private readonly tfMax: number;

  constructor(
    postings: ReadonlyArray<Posting & { tf: number }>,
    private readonly idf: number,
    private readonly avgdl: number,
    partitions: ReadonlySet<number> | null,
  ) {
    this.examined = postings.length;
    this.byRow = new Map(postings.map((posting) => [posting.row, posting.tf]));
    this.tfMax = postings.reduce((max, posting) => Math.max(max, posting.tf), 0);
    this.heads = postings
      .filter((posting) => partitions === null || partitions.has(partitionOfRow(posting.row)))
      .map(({ row, tf, len }) => ({
        row,
        len,
        partition: partitionOfRow(row),
        score: this.part(tf, len),
      }))
      .sort((a, b) => (before(a, b) ? -1 : before(b, a) ? 1 : 0));
  }

  head(): StreamHead | null {
    return this.heads[this.at] ?? null;
  }

  take(): StreamHead | null {
    return this.heads[this.at++] ?? null;
  }

  frequencyIn(row: number, _len: number, worth?: (tf: number) => boolean): number | null {
    const tf = this.byRow.get(row);
    return tf === undefined || (worth !== undefined && !worth(tf)) ? null : tf;
  }

  part(tf: number, len: number): number {
    return bm25Part(this.idf, tf, len, this.avgdl);
  }

  partMax(len: number): number {
    return this.part(this.tfMax, len);
  }

  wholeList(): ReadonlyMap<number, number> {
    return this.byRow;
  }
}

export class TermStream implements WordStream {
  private readonly runs: Run[] = [];
  /** Postings decoded, by the stream and by lookups: what a search's cost follows. */
  examined = 0;
  /** Postings lookups of a row's frequency decoded, and the whole list once they reach it. */
  private lookedAt = 0;
  private byRow: Map<number, number> | null = null;

  constructor(
    private readonly statements: StreamStatements,
    private readonly termId: number,
    /** Rows holding the term: the postings of its whole list. */
    private readonly df: number,
    private readonly idf: number,
    private readonly avgdl: number,
    private readonly partitions: ReadonlySet<number> | null,
    /** Rows removed whose postings segments still hold (topk-removed.ts): skipped. */
    private readonly removed: RemovedRowsOf,
  ) {
    let next = statements.nextRun.get(termId, -1, -Infinity) as
      [number, number, number, number, Buffer] | undefined;
    while (next !== undefined) {
      const [segment, tf, len, tie, postings] = next;
      const reader = new BlockReader(postings);
      this.runs.push({ segment, tf, block: [len, tie], reader, head: null, looked: null });
      next = statements.nextRun.get(termId, segment, tf) as typeof next;
    }
    // By frequency, as frequencyIn and partMax take them; a row is in one segment only.
    this.runs.sort((a, b) => a.tf - b.tf || a.segment - b.segment);
    for (const run of this.runs) this.advance(run);
  }

  head(): StreamHead | null {
    return this.bestRun()?.head ?? null;
  }

  take(): StreamHead | null {
    const run = this.bestRun();
    if (run === null) return null;
    const head = run.head;
    this.advance(run);
    return head;
  }

  /**
   * The term's weighted frequency in `row` (of `len` tokens), or null where it has none or where
   * it is below what `worth` takes: in each run worth it, lowest frequency first, as the runs of
   * low frequencies hold most rows, the block where the row's key would be, which is the block
   * the run's last lookup decoded more often than not (a search takes rows about in the order of
   * their keys), else a seek and a block decoded; while the postings lookups decoded are fewer
   * than the whole list's, then from the whole list decoded once into memory. Either way
   * lookups cost at most about twice the cheaper of the two.
   */
  frequencyIn(row: number, len: number, worth?: (tf: number) => boolean): number | null {
    if (this.byRow === null && this.lookedAt >= this.df) this.byRow = this.decodeAll();
    if (this.byRow !== null) {
      const tf = this.byRow.get(row);
      return tf === undefined || (worth !== undefined && !worth(tf)) ? null : tf;
    }
    const tie = tieOf(row);
    // Worth is true from some frequency up: the runs from the first it takes.
    let first = this.runs.length;
    while (first > 0 && (worth === undefined || worth(this.runs[first - 1].tf))) first -= 1;
    const key: [number, number] = [len, tie];
    for (const run of this.runs.slice(first)) {
      const block = this.lookedBlock(run, key);
      if (block?.rows.has(row)) return run.tf;
    }
    return null;
  }

  /** The block of `run` whose keys span `key`'s place (null: the run starts after it). */
  private lookedBlock(run: Run, key: [number, number]): LookedBlock | null {
    const { looked } = run;
    if (looked !== null && !after(looked.first, key) && !after(key, looked.last)) return looked;
    const found = this.statements.floorBlock.get(this.termId, run.segment, run.tf, ...key) as
      [number, number, Buffer] | undefined;
    if (found === undefined) return null;
    const [blockLen, blockTie, postings] = found;
    // The block decoded last, the key past its last posting: not in the run.
    if (looked !== null && looked.first[0] === blockLen && looked.first[1] === blockTie) {
      return looked;
    }
    const rows = new Set<number>();
    let last: [number, number] = [blockLen, blockTie];
    const reader = new BlockReader(postings);
    for (let posting = reader.next(); posting !== null; posting = reader.next()) {
      rows.add(posting.row);
      last = [posting.len, tieOf(posting.row)];
    }
    this.examined += rows.size;
    this.lookedAt += rows.size;
    run.looked = { first: [blockLen, blockTie], last, rows };
    return run.looked;
  }

  /** Every row's frequency of the term when lookups have decoded the whole list, else null. */
  wholeList(): ReadonlyMap<number, number> | null {
    return this.byRow;
  }

  /** Every row's frequency of the term, from every block of its list. */
  private decodeAll(): Map<number, number> {
    const byRow = new Map<number, number>();
    // Its postings are df and the removed rows': a range scan of fewer rows than that, if any.
    this.removed.readWhole(this.df);
    // all(), not iterate(): the connection answers the removed rows' lookups meanwhile.
    for (const [tf, block] of this.statements.wholeList.all(this.termId) as Array<
      [number, Buffer]
    >) {
      const reader = new BlockReader(block);
      for (let posting = reader.next(); posting !== null; posting = reader.next()) {
        this.examined += 1;
        if (!this.removed.has(posting.row)) byRow.set(posting.row, tf);
      }
    }
    return byRow;
  }

  /** The term's part of a row's score at this frequency. */
  part(tf: number, len: number): number {
    return bm25Part(this.idf, tf, len, this.avgdl);
  }

  /** Runs come in ascending frequency: the last one's is the highest. */
  partMax(len: number): number {
    return this.runs.length === 0 ? 0 : this.part(this.runs[this.runs.length - 1].tf, len);
  }

  private bestRun(): Run | null {
    let best: Run | null = null;
    for (const run of this.runs) {
      if (run.head !== null && (best === null || before(run.head, best.head!))) best = run;
    }
    return best;
  }

  private advance(run: Run): void {
    for (;;) {
      let posting = run.reader?.next() ?? null;
      if (posting === null && run.reader !== null) {
        const next = this.statements.nextBlock.get(
          this.termId,
          run.segment,
          run.tf,
          ...run.block,
        ) as [number, number, Buffer] | undefined;
        run.reader = next === undefined ? null : new BlockReader(next[2]);
        if (next !== undefined) run.block = [next[0], next[1]];
        posting = run.reader?.next() ?? null;
      }
      if (posting === null) {
        run.head = null;
        return;
      }
      this.examined += 1;
      const partition = partitionOfRow(posting.row);
      if (this.partitions !== null && !this.partitions.has(partition)) continue;
      if (this.removed.has(posting.row)) continue;
      const score = this.part(run.tf, posting.len);
      run.head = { row: posting.row, partition, score, len: posting.len };
      return;
    }
  }
}
