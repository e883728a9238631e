/**
 * The top-k lists kept beside each FTS5 table (FORMAT.md): for each term in at least
 * `listedDfMin` rows (a listed term) its document frequency and its postings ordered by
 * (weighted frequency, row tokens, partition, row). Within one frequency the rows come in
 * descending bm25 contribution for any average row length, so a search of a listed term merges
 * one run per frequency and reads about k postings, not every match (topk-reads.ts).
 *
 * Writes are gathered during a transaction (changed) and folded in before it commits (settle),
 * tokenized as FTS5 tokenizes (fts-tokens.ts). Other terms' document frequencies are FTS5's own
 * (an fts5vocab 'row' table), read once a term is first written and then kept in memory, so a
 * write costs an array's entry a term rather than a B-tree entry: terms are numbered as they are
 * tokenized, each table's apart (topk-term-ids.ts), and a transaction's bookkeeping of them is
 * arrays by number.
 * Which terms are listed, and what their lists hold,
 * is a function of the table's rows alone, never of the order or the batches they came in, so
 * a replay or a re-index makes the same lists.
 */
import type Database from 'better-sqlite3';
import type { Statement } from 'better-sqlite3';
import { assert } from '../shared/assert.js';
import type { FtsTable } from './fts-table.js';
import { FtsTokenizers } from './fts-tokens.js';
import { FtsPostings } from './topk-source.js';
import { TermIds, TermValues } from './topk-term-ids.js';
import { decodeBlock, type Posting } from './topk-blocks.js';
import { DroppedPostings, RemovedRows, TOPK_REMOVED_SCHEMA } from './topk-removed.js';
import { runsOf, TOPK_SEGMENTS_SCHEMA, TopkSegments, type TermPosting } from './topk-segments.js';
import { prepareListBlocks } from './topk-stream.js';

const TOPK_SCHEMA = `
  CREATE TABLE IF NOT EXISTS topk_settings (
    id INTEGER PRIMARY KEY CHECK (id = 0), listed_df_min INTEGER NOT NULL);
  CREATE TABLE IF NOT EXISTS topk_terms (
    id INTEGER PRIMARY KEY, table_id INTEGER NOT NULL, term TEXT NOT NULL, df INTEGER NOT NULL);
  CREATE UNIQUE INDEX IF NOT EXISTS topk_terms_by_term ON topk_terms (table_id, term);
  ${TOPK_SEGMENTS_SCHEMA}
  ${TOPK_REMOVED_SCHEMA}
`;

/**
 * Layouts 6 (the term's text in every posting) and 7 (a B-tree entry a posting, 18.5 bytes) kept
 * their postings in `topk_postings`, layouts 8 to 10 a list in one set of blocks (`topk_blocks`
 * without a `segment` column) rewritten in place, layout 8 with every term's row in
 * `topk_terms`: the lists are dropped, and open() builds them again.
 */
function dropEarlierLists(db: Database.Database): void {
  const count = (sql: string) => db.prepare(sql).pluck().get() as number;
  const postings = count(
    "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'topk_postings'",
  );
  const blocks = count("SELECT count(*) FROM pragma_table_info('topk_blocks')");
  const segmented = count(
    "SELECT count(*) FROM pragma_table_info('topk_blocks') WHERE name = 'segment'",
  );
  if (postings === 0 && (blocks === 0 || segmented === 1)) return;
  db.exec(
    'DROP TABLE IF EXISTS topk_postings; DROP TABLE IF EXISTS topk_blocks; ' +
      'DROP TABLE IF EXISTS topk_segments; DROP TABLE IF EXISTS topk_removed; ' +
      'DROP TABLE IF EXISTS topk_terms; DROP TABLE IF EXISTS topk_settings',
  );
}

/** A trigram table's words are phrases of several tokens: no list answers one. */
export function hasTopkLists(table: FtsTable): boolean {
  return table.settings.tokenizer !== 'trigram';
}

/** A step of TopkIndex.mergeStep: the terms it took, and whether it rewrote any of their lists. */
export interface TopkMergeStep {
  terms: number;
  rewrote: boolean;
}

interface RowChange {
  row: number;
  /** The row's column texts, as FTS5 indexed them. */
  texts: string[];
  added: boolean;
}

/** A changed row's terms (by TermIds number) with their weighted frequencies, and its tokens. */
interface RowTerms {
  change: RowChange;
  ids: number[];
  /** `tfs[i]`: the weighted frequency of `ids[i]` in the row, as bm25() adds it up. */
  tfs: number[];
  len: number;
}

/** What a document frequency holds for a term nothing is known of yet. */
const UNKNOWN = -1;
/** What a listed id holds for a term with no row in `topk_terms`. */
const NOT_LISTED = -1;

/**
 * What this connection knows of a table's terms, by the table's TermIds number, each exact as of
 * its last statement. `complete` when it has known them since the table had no row (a replay, a
 * new table): a term it does not hold is then in no row, and no count is read from FTS5.
 */
interface KnownTerms {
  dfs: TermValues;
  /** The term's row in `topk_terms` while it is listed, else NOT_LISTED (it has none). */
  listedIds: TermValues;
  complete: boolean;
}

function knownTerms(complete: boolean): KnownTerms {
  return {
    dfs: new TermValues(UNKNOWN, true),
    // A row id of topk_terms: not bounded by 32 bits.
    listedIds: new TermValues(NOT_LISTED),
    complete,
  };
}

/**
 * A table of at most this many times `listedDfMin` rows has its terms' counts read in one scan of
 * FTS5's terms when first written, rather than one lookup a term.
 */
const KNOWN_SCAN_LISTED_DF_MINS = 4;
/** ... and of at most this many rows, whatever `listedDfMin`. */
const KNOWN_SCAN_ROWS_MAX = 100_000;

function knownScanRowsMax(listedDfMin: number): number {
  return Math.min(listedDfMin * KNOWN_SCAN_LISTED_DF_MINS, KNOWN_SCAN_ROWS_MAX);
}

export class TopkIndex {
  private readonly pending = new Map<number, { table: FtsTable; changes: RowChange[] }>();
  private readonly tokenizers: FtsTokenizers;
  /** table id → the terms written since it was cleared, each with its document frequency and id. */
  private readonly known = new Map<number, KnownTerms>();
  /**
   * table id → its terms' numbers, each table's apart: ids shared by every table would grow each
   * table's arrays by number to the count of all of them.
   */
  private readonly termIds = new Map<number, TermIds>();
  /**
   * A transaction's bookkeeping by term id (of the table it settles), valid where `seenIn` holds
   * its stamp (a row's for `rowTf`, the transaction's for the others), so nothing is cleared
   * between rows, transactions or tables: `seenIn` the last row or transaction to meet the term,
   * `rowTf` its weighted frequency in the row, `deltas` the rows the transaction added holding
   * it, net, `keptIn` the last transaction it was listed before and after.
   */
  private readonly rowSeenIn = new TermValues(0);
  private readonly seenIn = new TermValues(0);
  private readonly rowTf = new TermValues(0);
  private readonly deltas = new TermValues(0, true);
  private readonly keptIn = new TermValues(0);
  private stamp = 0;
  /** By table object, not id: an id given again comes with another table. */
  private readonly sources = new WeakMap<FtsTable, FtsPostings>();
  private readonly segments: TopkSegments;
  private readonly removed: RemovedRows;
  /**
   * Listed terms (their ids in `topk_terms`) whose segments may be due a merge, for mergeStep:
   * each checked there, as a term may have gone since.
   */
  private readonly mergesDue = new Set<number>();
  /**
   * Listed terms of more than one segment, or with postings of removed rows (as mergesDue), for
   * mergeStep's whole merges.
   */
  private readonly unmerged = new Set<number>();
  private readonly statements: Record<
    | 'settings'
    | 'setSettings'
    | 'listedTerm'
    | 'tableTerms'
    | 'insertTerm'
    | 'setDfs'
    | 'listedTerms'
    | 'deleteTerms'
    | 'termTable'
    | 'termsOfSegments'
    | 'termsUnmerged',
    Statement
  >;

  constructor(
    private readonly db: Database.Database,
    /**
     * Rows a term must be in to be listed: below it FTS5 ranks every match quickly (about 1 us
     * a match); above it a list costs a posting for each row written.
     */
    private readonly listedDfMin: number,
    /**
     * Terms whose document frequency is kept in memory between writes, over every table: past
     * it they are all forgotten, and read again from FTS5 as they are next written.
     */
    private readonly knownTermsMax: number,
    /** Segments of a term's tier merged into one (TopkSegments). */
    private readonly mergeSegmentsMin: number,
    /** Only the writer's connection upgrades the lists of an earlier layout, and merges. */
    private readonly writer: boolean,
  ) {
    assert(Number.isSafeInteger(listedDfMin) && listedDfMin >= 1, 'listedDfMin is at least 1');
    assert(Number.isSafeInteger(knownTermsMax) && knownTermsMax >= 0, 'knownTermsMax is >= 0');
    if (writer) {
      dropEarlierLists(db);
    }
    db.exec(TOPK_SCHEMA);
    this.tokenizers = new FtsTokenizers(db);
    this.segments = new TopkSegments(db, this.mergeSegmentsMin);
    this.removed = new RemovedRows(db);
    const prepare = (sql: string) => db.prepare(sql);
    this.statements = {
      settings: prepare('SELECT listed_df_min FROM topk_settings WHERE id = 0').pluck(),
      setSettings: prepare(
        'INSERT INTO topk_settings (id, listed_df_min) VALUES (0, ?) ' +
          'ON CONFLICT (id) DO UPDATE SET listed_df_min = excluded.listed_df_min',
      ),
      listedTerm: prepare('SELECT id, df FROM topk_terms WHERE table_id = ? AND term = ?').raw(),
      tableTerms: prepare('SELECT id, term, df FROM topk_terms WHERE table_id = ?').raw(),
      insertTerm: prepare('INSERT INTO topk_terms (table_id, term, df) VALUES (?, ?, ?)'),
      // One statement for every listed term a transaction moved: {id: df}.
      setDfs: prepare(
        'UPDATE topk_terms SET df = d.value FROM json_each(?) AS d ' +
          'WHERE topk_terms.id = CAST(d.key AS INTEGER)',
      ),
      deleteTerms: prepare('DELETE FROM topk_terms WHERE id IN (SELECT value FROM json_each(?))'),
      termTable: prepare('SELECT table_id, df FROM topk_terms WHERE id = ?').raw(),
      termsOfSegments: prepare(
        'SELECT term_id FROM topk_segments GROUP BY term_id HAVING count(*) >= ?',
      ).pluck(),
      // A term's segments hold each live row once: more postings than rows are removed rows'.
      termsUnmerged: prepare(
        'SELECT s.term_id FROM topk_segments s JOIN topk_terms t ON t.id = s.term_id ' +
          'GROUP BY s.term_id HAVING count(*) >= 2 OR sum(s.postings) > max(t.df)',
      ).pluck(),
      listedTerms: prepare(
        'SELECT id, term FROM topk_terms WHERE table_id = ? AND df >= ? ORDER BY id',
      ).raw(),
    };
    this.findMergesDue();
  }

  /**
   * Builds every table's lists from its FTS5 index when the store has none of this
   * `listedDfMin` (a store of an earlier layout, or another setting): once, in a transaction,
   * every list of the store deleted first (a retired table's too, which no one reads).
   */
  open(tables: readonly FtsTable[]): void {
    if (this.statements.settings.get() === this.listedDfMin) return;
    this.forgetTerms();
    this.db.transaction(() => {
      this.db.exec(
        'DELETE FROM topk_blocks; DELETE FROM topk_segments; DELETE FROM topk_removed; ' +
          'DELETE FROM topk_terms',
      );
      for (const table of tables) this.rebuild(table);
      this.statements.setSettings.run(this.listedDfMin);
    })();
    // The rebuild numbered terms afresh: the ids the constructor found due name other terms now.
    this.findMergesDue();
  }

  /** A row indexed in (`added`) or removed from `table`, with the column texts FTS5 was given. */
  changed(table: FtsTable, row: number, texts: string[], added: boolean): void {
    if (!hasTopkLists(table)) return;
    let pending = this.pending.get(table.id);
    if (pending === undefined) {
      pending = { table, changes: [] };
      this.pending.set(table.id, pending);
    }
    pending.changes.push({ row, texts, added });
  }

  /** A table dropped in this transaction: its lists go with its other rows (retired-tables.ts). */
  dropped(tableId: number): void {
    this.pending.delete(tableId);
    this.forgetTable(tableId);
  }

  private forgetTable(tableId: number): void {
    this.known.delete(tableId);
    this.termIds.delete(tableId);
  }

  /** The transaction rolled back: what it gathered, and what is known of terms, is forgotten. */
  forget(): void {
    this.pending.clear();
    this.forgetTerms();
    this.findMergesDue();
  }

  /** The terms with segments enough to be due a merge, from the store (the writer's only). */
  private findMergesDue(): void {
    this.mergesDue.clear();
    this.unmerged.clear();
    if (!this.writer) return;
    for (const id of this.statements.termsOfSegments.all(this.mergeSegmentsMin) as number[]) {
      this.mergesDue.add(id);
    }
    for (const id of this.statements.termsUnmerged.all() as number[]) this.unmerged.add(id);
  }

  /**
   * Whether a term's segments may be due a merge (mergeStep): a tier's, or with
   * `wholeWrittenPercent` (not null) a whole list's.
   */
  mayMerge(wholeWrittenPercent: number | null): boolean {
    return this.mergesDue.size > 0 || (wholeWrittenPercent !== null && this.unmerged.size > 0);
  }

  /**
   * Merges the segments of terms due a merge, a term at a time, until `deadlineMs`
   * (performance.now()) passes, one term at least: the terms taken and whether any segment was
   * rewritten, or null when none is due.
   * Full tiers first (TopkSegments.merge); with none, and `wholeWrittenPercent` not null (writes
   * have paused), each term of several segments whose smaller ones hold at least that percent of
   * its largest's postings, or whose postings are that percent removed rows', has them all
   * merged into one (TopkSegments.mergeAll), so a search reads one run a frequency and few dead
   * postings once writes pause. Called in a transaction of its own.
   */
  mergeStep(deadlineMs: number, wholeWrittenPercent: number | null): TopkMergeStep | null {
    const whole = this.mergesDue.size === 0;
    const due = whole ? this.unmerged : this.mergesDue;
    if (due.size === 0 || (whole && wholeWrittenPercent === null)) return null;
    let terms = 0;
    let rewrote = false;
    const droppedOf = new Map<number, DroppedPostings>();
    for (const id of due) {
      due.delete(id);
      const term = this.statements.termTable.get(id) as [number, number] | undefined;
      if (term !== undefined) {
        const [tableId, df] = term;
        let dropped = droppedOf.get(tableId);
        if (dropped === undefined) {
          dropped = new DroppedPostings(this.removed, tableId);
          droppedOf.set(tableId, dropped);
        }
        const merged = whole
          ? this.segments.mergeAll(id, df, wholeWrittenPercent!, dropped)
          : this.segments.merge(id, dropped);
        rewrote ||= merged;
      }
      terms += 1;
      if (performance.now() >= deadlineMs) break;
    }
    // Each row's count is a total over the terms merged: flushed once a table, the sums are the same.
    for (const dropped of droppedOf.values()) dropped.flush();
    return { terms, rewrote };
  }

  /** Folds the transaction's changes into the lists; called last in every writing transaction. */
  settle(): void {
    for (const { table, changes } of this.pending.values()) this.settleTable(table, changes);
    this.pending.clear();
    // Every df held is of a term numbered in its table's TermIds, so the numbered terms bound them.
    if (this.numberedTerms() > this.knownTermsMax) this.forgetTerms();
  }

  /** What is known of every table's terms, and their ids, which it is kept by. */
  private forgetTerms(): void {
    this.known.clear();
    this.termIds.clear();
  }

  private numberedTerms(): number {
    let terms = 0;
    for (const ofTable of this.termIds.values()) terms += ofTable.size;
    return terms;
  }

  private termIdsOf(tableId: number): TermIds {
    let ofTable = this.termIds.get(tableId);
    if (ofTable === undefined) {
      ofTable = new TermIds();
      this.termIds.set(tableId, ofTable);
    }
    return ofTable;
  }

  /**
   * The terms numbered over every table, and the bytes of the arrays by number that hold what is
   * known of them, which knownTermsMax bounds: for checks and figures. `arrayBytes` is all of
   * them; `sharedArrayBytes` its part in the transaction's arrays, shared by every table, each as
   * long as the highest id of any.
   */
  knownTermsHeld(): { terms: number; arrayBytes: number; sharedArrayBytes: number } {
    let sharedArrayBytes = 0;
    for (const shared of [this.rowSeenIn, this.seenIn, this.rowTf, this.deltas, this.keptIn]) {
      sharedArrayBytes += shared.arrayBytes;
    }
    let arrayBytes = sharedArrayBytes;
    for (const ofTable of this.known.values()) {
      arrayBytes += ofTable.dfs.arrayBytes + ofTable.listedIds.arrayBytes;
    }
    for (const ofTable of this.termIds.values()) arrayBytes += ofTable.arrayBytes;
    return { terms: this.numberedTerms(), arrayBytes, sharedArrayBytes };
  }

  private sourceOf(table: FtsTable): FtsPostings {
    let source = this.sources.get(table);
    if (source === undefined) {
      source = new FtsPostings(this.db, table);
      this.sources.set(table, source);
    }
    return source;
  }

  /** The rows this transaction added holding term `id`, net (0: none, or it met none). */
  private deltaOf(id: number, transaction: number): number {
    return this.seenIn.get(id) === transaction ? this.deltas.get(id) : 0;
  }

  /**
   * The document frequency of term `id` before this transaction's `delta` rows, learnt when
   * unknown: from its row in `topk_terms` (a listed term, its id with it), else FTS5's count,
   * which already holds the transaction's rows.
   */
  private dfBefore(ofTable: KnownTerms, table: FtsTable, id: number, delta: number): number {
    const known = ofTable.dfs.get(id);
    if (known !== UNKNOWN) return known;
    let df = 0;
    if (!ofTable.complete) {
      const term = this.termIdsOf(table.id).termOf(id);
      const stored = this.statements.listedTerm.get(table.id, term) as [number, number] | undefined;
      if (stored !== undefined) {
        df = stored[1];
        ofTable.listedIds.set(id, stored[0]);
      } else {
        df = this.sourceOf(table).documentFrequency(term) - delta;
      }
    }
    ofTable.dfs.set(id, df);
    return df;
  }

  /**
   * What is known of the table's terms; `rowsAdded` the rows this transaction added, net, and
   * `touched` its terms. A table that had no row is known whole at once; one of a few times
   * `listedDfMin` rows is read whole from FTS5 (a scan of its terms costs less than a lookup a
   * term written); a larger one is learnt a term at a time.
   */
  private knownOf(
    table: FtsTable,
    rowsAdded: number,
    touched: readonly number[],
    transaction: number,
  ): KnownTerms {
    let ofTable = this.known.get(table.id);
    if (ofTable === undefined) {
      const source = this.sourceOf(table);
      if (!source.holdsMoreThan(rowsAdded)) ofTable = knownTerms(true);
      else if (source.holdsMoreThan(rowsAdded + knownScanRowsMax(this.listedDfMin))) {
        ofTable = knownTerms(false);
      } else {
        ofTable = this.scannedTerms(table, touched, transaction);
      }
      this.known.set(table.id, ofTable);
    }
    return ofTable;
  }

  /** Every term of the table before this transaction's changes, from FTS5 and `topk_terms`. */
  private scannedTerms(
    table: FtsTable,
    touched: readonly number[],
    transaction: number,
  ): KnownTerms {
    const ofTable = knownTerms(true);
    const termIds = this.termIdsOf(table.id);
    for (const [term, df] of this.sourceOf(table).documentFrequencies()) {
      const id = termIds.idOf(term);
      const before = df - this.deltaOf(id, transaction);
      if (before > 0) ofTable.dfs.set(id, before);
    }
    // A term whose every row this transaction removed is in FTS5 no more (any other it removed
    // from is held above, at more rows than FTS5 now counts).
    for (const id of touched) {
      const delta = this.deltas.get(id);
      if (delta < 0 && ofTable.dfs.get(id) === UNKNOWN) ofTable.dfs.set(id, -delta);
    }
    for (const [listedId, term, df] of this.statements.tableTerms.all(table.id) as Array<
      [number, string, number]
    >) {
      const id = termIds.idOf(term);
      ofTable.dfs.set(id, df);
      ofTable.listedIds.set(id, listedId);
    }
    return ofTable;
  }

  private settleTable(table: FtsTable, changes: readonly RowChange[]): void {
    if (this.sourceOf(table).rowsSynced() + changes.length < this.listedDfMin) {
      // Fewer rows than listedDfMin before and after: no term is listed or can be, nothing is
      // tokenized, and what was known of the terms is stale.
      this.forgetTable(table.id);
      return;
    }
    const transaction = ++this.stamp;
    // The transaction's terms in the order it first met them, each with its rows added, net.
    const touched: number[] = [];
    const rows = this.rowTerms(table, changes);
    for (const { change, ids } of rows) {
      const net = change.added ? 1 : -1;
      for (const id of ids) {
        if (this.seenIn.get(id) !== transaction) {
          this.seenIn.set(id, transaction);
          this.deltas.set(id, 0);
          touched.push(id);
        }
        this.deltas.set(id, this.deltas.get(id) + net);
      }
    }
    // Terms listed before and after take the changes block by block; terms crossing the
    // threshold get their list built or dropped whole, once, from the table as it now stands.
    const built: Array<[number, string]> = [];
    const unlisted: number[] = [];
    const dfs: Record<number, number> = {};
    let rowsAdded = 0;
    for (const { added } of changes) rowsAdded += added ? 1 : -1;
    const ofTable = this.knownOf(table, rowsAdded, touched, transaction);
    const termIds = this.termIdsOf(table.id);
    // The removed rows as they were before this transaction's: an unlisted term's postings of a
    // row it removes were never counted in its entry.
    const unlistedDropped = new DroppedPostings(this.removed, table.id);
    for (const id of touched) {
      const delta = this.deltas.get(id);
      const after = this.dfBefore(ofTable, table, id, delta) + delta;
      if (after < 0) {
        assert(false, `term ${termIds.termOf(id)} of table ${table.id} in ${after} rows`);
      }
      const isListed = after >= this.listedDfMin;
      const listedId = ofTable.listedIds.get(id);
      if (listedId !== NOT_LISTED && !isListed) {
        // A term's list goes before its id can: a new term may be given the id again.
        this.segments.deleteList(listedId, unlistedDropped);
        unlisted.push(listedId);
        ofTable.listedIds.set(id, NOT_LISTED);
      } else if (listedId !== NOT_LISTED) {
        this.keptIn.set(id, transaction);
        if (delta !== 0) dfs[listedId] = after;
      } else if (isListed) {
        const term = termIds.termOf(id);
        const newId = Number(this.statements.insertTerm.run(table.id, term, after).lastInsertRowid);
        ofTable.listedIds.set(id, newId);
        built.push([newId, term]);
      }
      ofTable.dfs.set(id, after);
    }
    unlistedDropped.flush();
    if (unlisted.length > 0) this.statements.deleteTerms.run(JSON.stringify(unlisted));
    if (Object.keys(dfs).length > 0) this.statements.setDfs.run(JSON.stringify(dfs));
    // A row added and removed in one transaction (written twice in a batch) nets out: it is in
    // no list. Another removed row's postings stay in their segments: one entry a row, counting
    // its postings in the lists listed before and after (the others' are gone with them).
    const rowNets = new Map<number, number>();
    for (const { row, added } of changes)
      rowNets.set(row, (rowNets.get(row) ?? 0) + (added ? 1 : -1));
    const removedPostings = new Map<number, number>();
    const added = new Map<number, TermPosting[]>();
    for (const { change, ids, tfs, len } of rows) {
      const net = rowNets.get(change.row)!;
      assert(net >= -1 && net <= 1, `row ${change.row} changed twice`);
      if (net === 0) continue;
      let kept = 0;
      for (let i = 0; i < ids.length; i++) {
        if (this.keptIn.get(ids[i]) !== transaction) continue;
        kept += 1;
        // Its dead postings wait for a whole merge: no segment added marks the term otherwise.
        if (net < 0) {
          this.unmerged.add(ofTable.listedIds.get(ids[i]));
          continue;
        }
        const listedId = ofTable.listedIds.get(ids[i]);
        let postings = added.get(listedId);
        if (postings === undefined) {
          postings = [];
          added.set(listedId, postings);
        }
        postings.push({ tf: tfs[i], len, row: change.row });
      }
      if (net < 0 && kept > 0) removedPostings.set(change.row, kept);
    }
    for (const [row, postings] of removedPostings) this.removed.add(table.id, row, postings);
    for (const [id, postings] of added) {
      if (this.segments.add(id, postings)) this.mergesDue.add(id);
      this.unmerged.add(id);
    }
    for (const [id, term] of built) this.segments.build(id, this.sourceOf(table).postingsOf(term));
  }

  /**
   * Each changed row's terms, numbered, with their weighted frequencies: each occurrence's
   * column weight added in (column, offset) order, as weightedFrequency and FTS5 add them.
   */
  private rowTerms(table: FtsTable, changes: readonly RowChange[]): RowTerms[] {
    const weights = table.layout.weights;
    const texts = changes.flatMap((change) => {
      assert(
        change.texts.length === weights.length,
        `a row of table ${table.id} has ${weights.length} columns`,
      );
      return change.texts;
    });
    const tokenized = this.tokenizers.tokenizeIds(
      table.settings.tokenizer,
      texts,
      this.termIdsOf(table.id),
    );
    return changes.map((change, i) => {
      const row = ++this.stamp;
      const ids: number[] = [];
      let len = 0;
      for (let column = 0; column < weights.length; column++) {
        const occurrences = tokenized[i * weights.length + column];
        len += occurrences.length;
        for (const id of occurrences) {
          let tf = 0;
          if (this.rowSeenIn.get(id) === row) tf = this.rowTf.get(id);
          else {
            this.rowSeenIn.set(id, row);
            ids.push(id);
          }
          this.rowTf.set(id, tf + weights[column]);
        }
      }
      return { change, ids, tfs: ids.map((id) => this.rowTf.get(id)), len };
    });
  }

  /** The table's document frequencies and lists made from its FTS5 index, where it has none. */
  private rebuild(table: FtsTable): void {
    if (!hasTopkLists(table)) return;
    const source = this.sourceOf(table);
    source.copyFrequencies(table.id, this.listedDfMin);
    const listed = this.statements.listedTerms.all(table.id, this.listedDfMin) as Array<
      [number, string]
    >;
    for (const [id, term] of listed) this.segments.build(id, source.postingsOf(term));
  }
}

/** A posting of a list as stored, with its term and frequency: for checks and figures. */
export interface StoredPosting extends Posting {
  term: string;
  tf: number;
}

/**
 * Every posting of a table's lists (null: of every table) as a search sees it, the union of a
 * term's segments without removed rows, in table, term, frequency and run order.
 */
export function* storedPostings(
  db: Database.Database,
  tableId: number | null,
): Generator<StoredPosting> {
  const terms = db
    .prepare(
      'SELECT id, table_id, term FROM topk_terms WHERE ? IS NULL OR table_id = ? ' +
        'ORDER BY table_id, term',
    )
    .raw()
    .all(tableId, tableId) as Array<[number, number, string]>;
  const blocks = prepareListBlocks(db);
  const removed = new RemovedRows(db);
  for (const [id, table, term] of terms) {
    const isRemoved = removed.of(table).has;
    const postings: StoredPosting[] = [];
    for (const [tf, bytes] of blocks.all(id) as Array<[number, Buffer]>) {
      for (const posting of decodeBlock(bytes)) {
        if (!isRemoved(posting.row)) postings.push({ term, tf, ...posting });
      }
    }
    // In run order, each row once (a row twice is a list gone apart from FTS5's rows).
    for (const run of runsOf(postings)) yield* run;
  }
}
