/**
 * A search of one listed term (topk-index.ts) without filter or sort: its best rows by bm25,
 * read from the term's list instead of ranking every match. The list holds one run per weighted
 * frequency, each in descending contribution (row tokens ascending, then partition and row, the
 * order of ties), so merging the runs' heads yields the rows in the search's own order and stops
 * after `depth`: postings decoded are about depth plus one a run (each run's first block is read
 * to merge them), whatever the matches.
 * Scores are bm25() as FTS5 computes it (fts5_aux.c), with the table's statistics as FTS5 keeps
 * them (fts-stats.ts).
 */
import type Database from 'better-sqlite3';
import type { Statement } from 'better-sqlite3';
import { FtsStats } from './fts-stats.js';
import { partitionOfRow, type FtsTable } from './fts-table.js';
import { FtsTokenizers } from './fts-tokens.js';
import { BlockReader } from './topk-blocks.js';
import { hasTopkLists } from './topk-index.js';

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

export interface TopkFound {
  /** The best rows, best first. */
  rows: TopkRow[];
  /** Rows of the table holding the term, in every partition. */
  df: number;
  /** Postings decoded from the list's blocks: what the search's cost follows. */
  examined: number;
}

/** A run of the list: the blocks of one weighted frequency, best first. */
interface Run {
  tf: number;
  /** The key of the block being read, for the next one's seek. */
  block: [number, number];
  reader: BlockReader | null;
  head: TopkRow | null;
}

/** True when `a` comes before `b` in a search's order (score, then partition, then row). */
function before(a: TopkRow, b: TopkRow): boolean {
  if (a.score !== b.score) return a.score > b.score;
  if (a.partition !== b.partition) return a.partition < b.partition;
  return a.row < b.row;
}

export class TopkReads {
  private readonly tokenizers: FtsTokenizers;
  private readonly stats = new Map<string, FtsStats>();
  private readonly statements: Record<'settings' | 'term' | 'nextRun' | 'nextBlock', Statement>;

  constructor(private readonly db: Database.Database) {
    this.tokenizers = new FtsTokenizers(db);
    const prepare = (sql: string) => db.prepare(sql);
    this.statements = {
      settings: prepare('SELECT listed_df_min FROM topk_settings WHERE id = 0').pluck(),
      term: prepare('SELECT id, df FROM topk_terms WHERE table_id = ? AND term = ?').raw(),
      // A run's first block comes with its frequency: one seek a run.
      nextRun: prepare(
        'SELECT tf, len, tie, postings FROM topk_blocks WHERE term_id = ? AND tf > ? ' +
          'ORDER BY tf, len, tie LIMIT 1',
      ).raw(),
      nextBlock: prepare(
        'SELECT len, tie, postings FROM topk_blocks WHERE term_id = ? AND tf = ? ' +
          'AND (len, tie) > (?, ?) ORDER BY len, tie LIMIT 1',
      ).raw(),
    };
  }

  /**
   * The best `depth` rows of `text` (one word of a query) in `partitions` (null: all), or null
   * when no list answers it: the text is not one token of the table's tokenizer, or its term is
   * not listed.
   */
  search(
    table: FtsTable,
    text: string,
    depth: number,
    partitions: ReadonlySet<number> | null,
  ): TopkFound | null {
    if (!hasTopkLists(table)) return null;
    const term = this.termOf(table, text);
    if (term === null) return null;
    const listedDfMin = this.statements.settings.get() as number | undefined;
    const stored = this.statements.term.get(table.id, term) as [number, number] | undefined;
    if (listedDfMin === undefined || stored === undefined || stored[1] < listedDfMin) return null;
    const [termId, df] = stored;
    const totals = this.statsOf(table).totals();
    const idf = bm25Idf(totals.rows, df);
    const avgdl = totals.tokens / totals.rows;
    const runs = this.runs(termId);
    let examined = 0;
    const advance = (run: Run) => {
      for (;;) {
        let posting = run.reader?.next() ?? null;
        if (posting === null && run.reader !== null) {
          const next = this.statements.nextBlock.get(termId, run.tf, ...run.block) as
            [number, number, Buffer] | undefined;
          run.reader = next === undefined ? null : new BlockReader(next[2]);
          if (next !== undefined) run.block = [next[0], next[1]];
          posting = run.reader?.next() ?? null;
        }
        if (posting === null) {
          run.head = null;
          return;
        }
        examined += 1;
        const partition = partitionOfRow(posting.row);
        if (partitions !== null && !partitions.has(partition)) continue;
        run.head = {
          row: posting.row,
          partition,
          score: bm25Part(idf, run.tf, posting.len, avgdl),
        };
        return;
      }
    };
    runs.forEach(advance);
    const rows: TopkRow[] = [];
    while (rows.length < depth) {
      let best: Run | null = null;
      for (const run of runs) {
        if (run.head !== null && (best === null || before(run.head, best.head!))) best = run;
      }
      if (best === null) break;
      rows.push(best.head!);
      advance(best);
    }
    return { rows, df, examined };
  }

  /** The one term FTS5 makes of `text`, else null. */
  private termOf(table: FtsTable, text: string): string | null {
    const [tokenized] = this.tokenizers.tokenize(table.settings.tokenizer, [text]);
    if (tokenized.tokens !== 1) return null;
    const [term] = tokenized.counts.keys();
    return term;
  }

  /** The list's runs, by a seek for each next frequency, each with its first block. */
  private runs(termId: number): Run[] {
    const runs: Run[] = [];
    let next = this.statements.nextRun.get(termId, -Infinity) as
      [number, number, number, Buffer] | undefined;
    while (next !== undefined) {
      const [tf, len, tie, postings] = next;
      runs.push({ tf, block: [len, tie], reader: new BlockReader(postings), head: null });
      next = this.statements.nextRun.get(termId, tf) as typeof next;
    }
    return runs;
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
