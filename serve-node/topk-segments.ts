/**
 * A listed term's list as segments (FORMAT.md): each writing transaction adds its new postings of
 * the term as a new segment, built whole in memory and written in key order, reading no block;
 * segments of one tier (their postings within a power of `mergeSegmentsMin`) are merged into one
 * once there are `mergeSegmentsMin` of them (in the background: background-steps.ts), dropping
 * the postings of removed rows (topk-removed.ts). A posting is so rewritten once a tier, O(log N)
 * times, and a term merged holds at most `mergeSegmentsMin - 1` segments a tier, which bounds the
 * runs a search merges.
 */
import type Database from 'better-sqlite3';
import type { Statement } from 'better-sqlite3';
import { assert } from '../shared/assert.js';
import {
  comparePostings,
  decodeBlock,
  encodeBlock,
  splitBlocks,
  tieOf,
  type Posting,
} from './topk-blocks.js';
import type { DroppedPostings } from './topk-removed.js';
import { prepareListBlocks } from './topk-stream.js';

export const TOPK_SEGMENTS_SCHEMA = `
  CREATE TABLE IF NOT EXISTS topk_segments (
    term_id INTEGER NOT NULL, segment INTEGER NOT NULL, postings INTEGER NOT NULL,
    PRIMARY KEY (term_id, segment)) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS topk_blocks (
    term_id INTEGER NOT NULL, segment INTEGER NOT NULL, tf REAL NOT NULL, len INTEGER NOT NULL,
    tie INTEGER NOT NULL, postings BLOB NOT NULL,
    PRIMARY KEY (term_id, segment, tf, len, tie)) WITHOUT ROWID;
`;

/** A posting with its weighted frequency: what a segment is built from. */
export interface TermPosting extends Posting {
  tf: number;
}

interface Segment {
  segment: number;
  postings: number;
}

/** The tier of a segment of `postings`: how many times `fanIn` divides into it. */
function tierOf(postings: number, fanIn: number): number {
  let tier = 0;
  for (let rest = postings; rest >= fanIn; rest = Math.floor(rest / fanIn)) tier += 1;
  return tier;
}

export class TopkSegments {
  private readonly statements: Record<
    | 'segments'
    | 'insertSegment'
    | 'deleteSegment'
    | 'nextFrequency'
    | 'runBlocks'
    | 'insertBlock'
    | 'deleteRunBlocks'
    | 'listBlocks'
    | 'deleteList'
    | 'deleteSegments',
    Statement
  >;

  constructor(
    db: Database.Database,
    /** Segments of one tier merged into one (ServeNodeLimits.searchTopkMergeSegments). */
    private readonly mergeSegmentsMin: number,
  ) {
    assert(
      Number.isSafeInteger(mergeSegmentsMin) && mergeSegmentsMin >= 2,
      'mergeSegmentsMin is at least 2',
    );
    const prepare = (sql: string) => db.prepare(sql);
    this.statements = {
      segments: prepare('SELECT segment, postings FROM topk_segments WHERE term_id = ?'),
      insertSegment: prepare(
        'INSERT INTO topk_segments (term_id, segment, postings) VALUES (?, ?, ?)',
      ),
      deleteSegment: prepare('DELETE FROM topk_segments WHERE term_id = ? AND segment = ?'),
      nextFrequency: prepare(
        'SELECT tf FROM topk_blocks WHERE term_id = ? AND segment = ? AND tf > ? ' +
          'ORDER BY tf LIMIT 1',
      ).pluck(),
      runBlocks: prepare(
        'SELECT postings FROM topk_blocks WHERE term_id = ? AND segment = ? AND tf = ? ' +
          'ORDER BY len, tie',
      ).pluck(),
      insertBlock: prepare(
        'INSERT INTO topk_blocks (term_id, segment, tf, len, tie, postings) ' +
          'VALUES (?, ?, ?, ?, ?, ?)',
      ),
      deleteRunBlocks: prepare(
        'DELETE FROM topk_blocks WHERE term_id = ? AND segment = ? AND tf = ?',
      ),
      listBlocks: prepareListBlocks(db),
      deleteList: prepare('DELETE FROM topk_blocks WHERE term_id = ?'),
      deleteSegments: prepare('DELETE FROM topk_segments WHERE term_id = ?'),
    };
  }

  /**
   * `postings` (of rows the list does not hold yet, in any order) as a new segment of term `id`:
   * answers whether a tier of the term's segments is due a merge (merge).
   */
  add(id: number, postings: TermPosting[]): boolean {
    const segments = this.statements.segments.all(id) as Segment[];
    const segment = segments.reduce((max, each) => Math.max(max, each.segment + 1), 0);
    this.write(id, segment, postings);
    segments.push({ segment, postings: postings.length });
    return this.fullTier(segments) !== undefined;
  }

  /**
   * Term `id`'s segments merged while a tier holds `mergeSegmentsMin` of them: whether any
   * was.
   */
  merge(id: number, dropped: DroppedPostings): boolean {
    const segments = this.statements.segments.all(id) as Segment[];
    let rewrote = false;
    for (let full = this.fullTier(segments); full !== undefined; full = this.fullTier(segments)) {
      const merged = this.mergeSegments(id, full, dropped);
      rewrote = true;
      for (const each of full) segments.splice(segments.indexOf(each), 1);
      if (merged !== null) segments.push(merged);
    }
    return rewrote;
  }

  /**
   * Term `id`'s segments merged into one where the smaller ones hold at least `writtenPercent`
   * of its largest's postings, or where at least `writtenPercent` of them are removed rows'
   * (`df` the term's rows: its segments hold each live row once), even a list of one segment
   * (fewer: they wait for more writes, as a merge rewrites them all): whether they were.
   */
  mergeAll(id: number, df: number, writtenPercent: number, dropped: DroppedPostings): boolean {
    const segments = this.statements.segments.all(id) as Segment[];
    if (segments.length === 0) return false;
    const largest = Math.max(...segments.map((each) => each.postings));
    const total = segments.reduce((sum, each) => sum + each.postings, 0);
    assert(total >= df, `term ${id}'s segments hold ${total} postings of ${df} rows`);
    const written = segments.length >= 2 && (total - largest) * 100 >= writtenPercent * largest;
    const dead = (total - df) * 100 >= writtenPercent * total && total > df;
    if (!written && !dead) return false;
    this.mergeSegments(id, segments, dropped);
    return true;
  }

  /** The segments of a tier that holds `mergeSegmentsMin` of them, if any. */
  private fullTier(segments: readonly Segment[]): Segment[] | undefined {
    const tiers = new Map<number, Segment[]>();
    for (const each of segments) {
      const tier = tierOf(each.postings, this.mergeSegmentsMin);
      tiers.set(tier, [...(tiers.get(tier) ?? []), each]);
    }
    return [...tiers.values()].find((tier) => tier.length >= this.mergeSegmentsMin);
  }

  /** The list of a term that has none (crossing the threshold, or rebuilt): one segment. */
  build(id: number, postings: TermPosting[]): void {
    this.write(id, 0, postings);
  }

  /**
   * Term `id`'s list deleted, every segment (a term falling below the threshold): the postings
   * of removed rows among them counted as `dropped`.
   */
  deleteList(id: number, dropped: DroppedPostings): void {
    for (const [, block] of this.statements.listBlocks.all(id) as Array<[number, Buffer]>) {
      for (const { row } of decodeBlock(block)) dropped.drops(row);
    }
    this.statements.deleteList.run(id);
    this.statements.deleteSegments.run(id);
  }

  /**
   * `segments` of term `id` merged into one, numbered as the lowest of them, without the postings
   * of removed rows: null when none is left. A run at a time, lowest frequency first: each
   * segment's run of the frequency is read in its order and the runs merged by their heads, so
   * memory holds one run of the list and nothing is sorted; the blocks are those a list built
   * whole would have.
   */
  private mergeSegments(
    id: number,
    segments: readonly Segment[],
    dropped: DroppedPostings,
  ): Segment | null {
    const numbers = segments.map((each) => each.segment);
    const segment = Math.min(...numbers);
    let postings = 0;
    for (const tf of this.frequenciesOf(id, numbers)) {
      const runs: Posting[][] = [];
      for (const each of numbers) {
        const run: Posting[] = [];
        // all(), not iterate(): the connection answers the removed rows' lookups meanwhile.
        for (const block of this.statements.runBlocks.all(id, each, tf) as Buffer[]) {
          for (const posting of decodeBlock(block)) {
            if (!dropped.drops(posting.row)) run.push(posting);
          }
        }
        this.statements.deleteRunBlocks.run(id, each, tf);
        if (run.length > 0) runs.push(run);
      }
      const run = mergedRuns(runs);
      if (run.length > 0) this.writeRun(id, segment, tf, run);
      postings += run.length;
    }
    for (const each of numbers) this.statements.deleteSegment.run(id, each);
    if (postings === 0) return null;
    this.statements.insertSegment.run(id, segment, postings);
    return { segment, postings };
  }

  /** The frequencies of runs in `segments` of term `id`, ascending: a seek a run. */
  private frequenciesOf(id: number, segments: readonly number[]): number[] {
    const tfs = new Set<number>();
    for (const segment of segments) {
      let tf = this.statements.nextFrequency.get(id, segment, -Infinity) as number | undefined;
      for (
        ;
        tf !== undefined;
        tf = this.statements.nextFrequency.get(id, segment, tf) as typeof tf
      ) {
        tfs.add(tf);
      }
    }
    return [...tfs].sort((a, b) => a - b);
  }

  /** A segment's blocks and its row: each run cut evenly into blocks, in key order. */
  private write(id: number, segment: number, postings: TermPosting[]): void {
    if (postings.length === 0) return;
    for (const run of runsOf(postings)) this.writeRun(id, segment, run[0].tf, run);
    this.statements.insertSegment.run(id, segment, postings.length);
  }

  /** One run of a segment (postings in the run's order), cut evenly into blocks. */
  private writeRun(id: number, segment: number, tf: number, run: readonly Posting[]): void {
    for (const block of splitBlocks(run)) {
      const first = block[0];
      this.statements.insertBlock.run(
        id,
        segment,
        tf,
        first.len,
        tieOf(first.row),
        encodeBlock(block),
      );
    }
  }
}

/**
 * Runs of one frequency, each in the run's order, merged into one in that order by their heads;
 * a row in two is a list gone apart from FTS5's rows (asserted).
 */
function mergedRuns(runs: readonly Posting[][]): Posting[] {
  if (runs.length === 1) return runs[0];
  const merged: Posting[] = [];
  const at = runs.map(() => 0);
  for (;;) {
    let best = -1;
    for (let i = 0; i < runs.length; i++) {
      const head = runs[i][at[i]];
      if (head === undefined) continue;
      if (best === -1 || comparePostings(head, runs[best][at[best]]) < 0) best = i;
    }
    if (best === -1) return merged;
    const head = runs[best][at[best]++];
    const last = merged[merged.length - 1];
    assert(last === undefined || last.row !== head.row, `row ${head.row} listed twice`);
    merged.push(head);
  }
}

/**
 * Postings grouped by frequency, each group in the run's order; a row twice in one list is a
 * list gone apart from FTS5's rows (asserted).
 */
export function runsOf<T extends TermPosting>(postings: T[]): T[][] {
  postings.sort((a, b) => a.tf - b.tf || comparePostings(a, b));
  const runs: T[][] = [];
  for (const posting of postings) {
    const last = runs[runs.length - 1];
    if (last !== undefined && last[0].tf === posting.tf) {
      assert(last[last.length - 1].row !== posting.row, `row ${posting.row} listed twice`);
      last.push(posting);
    } else runs.push([posting]);
  }
  return runs;
}
