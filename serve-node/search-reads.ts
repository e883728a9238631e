/**
 * The read side of the search store (search-store.ts): ranked searches with their totals, facet
 * counts and filtered or sorted scans of a collection's table, each one or two statements of
 * search-sql.ts, and what reads keep in memory between writes (prepared statements by shape,
 * facet values, the partitions a collection has a checkpoint of), all stamped with SQLite's
 * total_changes() (write-stamp.ts), so any write by the store's connection makes them read again.
 */
import type Database from 'better-sqlite3';
import type { FilterNode, SortClause } from '../shared/filter/ast.js';
import { DEFAULT_LIMITS } from './config.js';
import { countValues, FacetValues, type HeldField, type ValueCount } from './facet-values.js';
import { KIND_BOOLEAN, KIND_NUMBER } from './field-index.js';
import { FilterShares } from './filter-share.js';
import type { ParsedQuery } from './fts-query.js';
import { offsetOfRow, partitionOfRow, type FtsTable } from './fts-table.js';
import { ProbedFilter } from './probed-filter.js';
import {
  countQuery,
  facetEntriesQuery,
  facetQuery,
  matchRowsQuery,
  partitionsParam,
  QueryCache,
  scanQuery,
  searchQuery,
  type FacetPlan,
  type MatchShape,
  type ScanShape,
  type SortValues,
} from './search-sql.js';
import {
  TopkReads,
  type TopkFound,
  type TopkMatches,
  type TopkSearch,
  type TopkWords,
} from './topk-reads.js';
import { writeStamp } from './write-stamp.js';

export interface SearchMatch {
  key: string;
  partition: number;
  /** The offset of the version indexed. */
  offset: number;
  score: number;
  /** With `sort`: the document's value for each clause, null where it has none. */
  sort?: SortValues;
}

/** What a search found of its matches: at least `count`, exactly that many when `exact`. */
export interface FoundMatches {
  count: number;
  exact: boolean;
}

/** What narrows and orders a search or a scan, already checked against the settings. */
export interface FieldQuery {
  filter: FilterNode | null;
  sort: readonly SortClause[];
}

/** One value of a facet field and how many matches hold it. */
export interface FacetCount {
  value: number | string | boolean;
  count: number;
}

/** How a search is answered: 'auto' by a top-k list where one can, 'fts5' by FTS5's ranking. */
export type SearchPlan = 'auto' | 'fts5';

export interface SearchFound {
  matches: SearchMatch[];
  total: number;
  totalExact: boolean;
  /** Postings read, when a top-k list answered (topk-reads.ts). */
  examined?: number;
}

/** A key a filtered or sorted scan found, and its sort values. */
export interface ScanKey {
  key: string;
  partition: number;
  sort: SortValues;
}

/**
 * Facets are counted by value when the fields have at most this many entries a match: measured
 * on the filters bench's store, a lookup and sort a match costs about four times a value walked
 * in SQL (two facets over 10,557 matches: 20 ms by match, 10 ms by value); reading the values
 * into memory (facet-values.ts) costs less than that walk (4 ms for 21,114 entries).
 */
const FACET_BY_VALUE_ENTRIES_PER_MATCH = 4;
/**
 * The same once the values are held in memory: a held entry walked costs about 0.02 us and a
 * match's row from FTS5 into the set 0.3 us, against 1.3-2.3 us a match by match (two facets of
 * 21,114 entries, matches from 192 to 10,356: by match is faster below about 70 entries a match).
 */
const FACET_HELD_ENTRIES_PER_MATCH = 50;
/** Matches counted to choose a facet plan; past it, the plan is chosen as if there were this many. */
const FACET_PLAN_MATCHES_COUNTED_MAX = 100_000;

/** The partitions of a collection (its topic) this store holds a checkpoint of. */
const CHECKPOINTED_PARTITIONS = 'SELECT partition FROM checkpoints WHERE topic = ?';

/** A row's key, by the row: for the rows a top-k list found. */
const KEY_OF_ROW = 'SELECT key FROM doc_rows WHERE table_id = ? AND row = ?';

/** Statements of distinct query shapes kept prepared. */
const QUERY_SHAPES_CACHED = 256;

export class SearchReads {
  private readonly queries: QueryCache;
  private readonly facetValues: FacetValues;
  private readonly topk: TopkReads;
  private readonly filterShares: FilterShares;
  /** The write stamp of what reads keep in memory (write-stamp.ts). */
  private readonly stamp: () => number;
  /** collection → its partitions with a checkpoint here, read since the last write (`stamp`). */
  private checkpointedRead = { stamp: -1, of: new Map<string, number[]>() };

  /** `tableOf`: the table a collection answers from; undefined before its first write. */
  constructor(
    db: Database.Database,
    private readonly tableOf: (collection: string) => FtsTable | undefined,
  ) {
    this.queries = new QueryCache(db, QUERY_SHAPES_CACHED);
    this.facetValues = new FacetValues(db);
    this.stamp = writeStamp(db);
    this.topk = new TopkReads(db, this.stamp);
    this.filterShares = new FilterShares(db, this.queries);
  }

  /**
   * The best `depth` matches of one collection in `partitions`, best first (ties by partition,
   * then offset: the same order in every replica), and the number of matches, scored with the
   * statistics of the collection's one table (every hosted partition's documents).
   */
  search(
    collection: string,
    partitions: readonly number[],
    query: ParsedQuery,
    depth: number,
    totalExactMax: number,
    fields: FieldQuery = { filter: null, sort: [] },
    /** 'fts5' ranks every match as FTS5 does, even where a top-k list could answer (benches). */
    plan: SearchPlan = 'auto',
  ): SearchFound {
    const table = this.tableOf(collection);
    if (table === undefined) return { matches: [], total: 0, totalExact: true };
    const shape = this.matchShape(table, collection, partitions, query, fields.filter);
    // Lists answer listed words with no sort, and with a filter that passes rows enough (the
    // lists' search decides); anything else is FTS5's (search-sql.ts).
    const filter =
      fields.filter === null
        ? null
        : new ProbedFilter(this.queries, this.filterShares, table.id, fields.filter);
    const listed: TopkSearch | null =
      plan === 'auto' && query.words !== null && fields.sort.length === 0
        ? this.topk.search(
            table,
            query.words,
            depth,
            shape.partitions === null ? null : new Set(partitions),
            filter,
          )
        : null;
    if (listed !== null && listed.found !== null) {
      return this.topkAnswer(shape, query.words!, listed, depth, totalExactMax, filter);
    }
    if (plan === 'auto' && filter !== null) {
      // A search the lists declined has counted its matches already.
      const walked = listed === null ? this.walkedOf(shape, query) : listed.walked;
      this.readFilterAs(shape, filter, walked);
    }
    const { sql, params } = searchQuery(shape, fields.sort, depth);
    const rows = this.queries.statement(sql).all(...params) as SearchRow[];
    const matches: SearchMatch[] = rows.map((row) => ({
      key: row.key,
      score: row.score,
      partition: partitionOfRow(row.row),
      offset: offsetOfRow(row.row),
      ...(fields.sort.length > 0 ? { sort: sortValuesOf(row, fields.sort.length) } : {}),
    }));
    return { matches, ...this.total(shape, matches.length, depth, totalExactMax) };
  }

  /** The matches a top-k list found, with their keys, and their total. */
  private topkAnswer(
    shape: MatchShape,
    words: TopkWords,
    { found, walked }: { found: TopkFound; walked: TopkMatches },
    depth: number,
    totalExactMax: number,
    filter: ProbedFilter | null,
  ): SearchFound {
    const keyOf = this.queries.statement(KEY_OF_ROW).pluck();
    const matches: SearchMatch[] = found.rows.map(({ row, score, partition }) => ({
      key: keyOf.get(shape.table.id, row) as string,
      score,
      partition,
      offset: offsetOfRow(row),
    }));
    if (filter !== null && found.filtered !== undefined) {
      // Those the filter passes FTS5 counts, the filter read the cheaper way.
      const { tested, passed } = found.filtered;
      const filterAccess = filter.countAccess(
        walked.matches,
        walked.rows,
        passed / Math.max(tested, 1),
        totalExactMax,
      );
      const total = this.total({ ...shape, filterAccess }, matches.length, depth, totalExactMax);
      return { matches, ...total, examined: found.examined };
    }
    // Over every partition one word's document frequency is the number of matches, and any of
    // several words matches at least as many rows as the most frequent.
    const dfMax = Math.max(...found.dfs);
    const known =
      shape.partitions === null &&
      matches.length === depth &&
      (found.dfs.length === 1 || (!words.all && dfMax >= totalExactMax));
    // Else the lists may have counted them (topk-reads.ts), or FTS5 counts them.
    const counted = found.count ?? (known ? dfMax : undefined);
    const total =
      counted !== undefined
        ? { total: Math.min(counted, totalExactMax), totalExact: counted < totalExactMax }
        : this.total(shape, matches.length, depth, totalExactMax);
    return { matches, ...total, examined: found.examined };
  }

  /**
   * Fewer matches found than asked for are all of them: no second pass to count them. Otherwise
   * matches are counted up to totalExactMax, as Elasticsearch's track_total_hits does: counting
   * every match of a common term costs more than the whole top-k search.
   */
  private total(
    shape: MatchShape,
    found: number,
    depth: number,
    totalExactMax: number,
  ): { total: number; totalExact: boolean } {
    if (found < depth) return { total: found, totalExact: true };
    const count = countQuery(shape, totalExactMax);
    const total = this.queries
      .statement(count.sql)
      .pluck()
      .get(...count.params) as number;
    return { total, totalExact: total < totalExactMax };
  }

  /**
   * For each of `facetFields`, the count of each value over every match of the query and filter
   * (each document counted once a value), in no particular order.
   */
  facets(
    collection: string,
    partitions: readonly number[],
    query: ParsedQuery,
    filter: FilterNode | null,
    facetFields: readonly string[],
    /** What the search found of the matches, so they are counted again only when it decides. */
    matches: FoundMatches = { count: 0, exact: false },
    /** Entries of facet values held in memory at most (ServeNodeLimits.facetValuesHeldMax). */
    heldEntriesMax: number = DEFAULT_LIMITS.facetValuesHeldMax,
  ): Map<string, FacetCount[]> {
    const fields = [...new Set(facetFields)];
    const counts = new Map<string, FacetCount[]>(fields.map((field) => [field, []]));
    const table = this.tableOf(collection);
    if (table === undefined || fields.length === 0) return counts;
    const shape = this.matchShape(table, collection, partitions, query, filter);
    if (filter !== null) {
      this.readFilterAs(
        shape,
        new ProbedFilter(this.queries, this.filterShares, table.id, filter),
        this.walkedOf(shape, query),
      );
    }
    const add = (field: string, kind: number, value: number | string, n: number) => {
      const typed =
        kind === KIND_BOOLEAN ? value === 1 : kind === KIND_NUMBER ? Number(value) : value;
      counts.get(field)!.push({ value: typed, count: n });
    };
    const way = this.facetPlan(shape, fields, matches, heldEntriesMax);
    if (way.plan === 'held') {
      // The matches' rows from FTS5 (a walk of the doclists, no scores), then each held value's
      // rows looked up among them.
      const { sql, params } = matchRowsQuery(shape);
      const rows = new Set(
        this.queries
          .statement(sql)
          .pluck()
          .all(...params) as number[],
      );
      way.fields.forEach((held, i) => {
        for (const { kind, value, n } of countValues(held, rows)) add(fields[i], kind, value, n);
      });
      return counts;
    }
    const { sql, params } = facetQuery(shape, fields, way.plan);
    const rows = this.queries.statement(sql).all(...params) as Array<
      ValueCount & { field: string }
    >;
    for (const { field, kind, value, n } of rows) add(field, kind, value, n);
    return counts;
  }

  /** Up to `shape.limit` keys of a filtered or sorted scan, in its order. */
  scanKeys(
    collection: string,
    shape: Omit<ScanShape, 'tableId' | 'partitions'> & { partitions: readonly number[] },
  ): ScanKey[] {
    const table = this.tableOf(collection);
    if (table === undefined) return [];
    const partitions = this.partitionsAsked(collection, shape.partitions);
    const { sql, params } = scanQuery({ ...shape, partitions, tableId: table.id });
    const rows = this.queries.statement(sql).all(...params) as SearchRow[];
    return rows.map((row) => ({
      key: row.key,
      partition: partitionOfRow(row.row),
      sort: sortValuesOf(row, shape.sort.length),
    }));
  }

  /**
   * Facets are counted by value (over the values held in memory, else in SQL) when the matches
   * are many beside the fields' entries, else by match. The search's count of the matches is a
   * lower bound that decides when the entries are few; only when it does not, and is not exact,
   * are the matches counted again, up to FACET_PLAN_MATCHES_COUNTED_MAX. The entries are counted
   * only up to the point that decides, and held until the next write (FacetValues), so choosing
   * costs at most a walk of about the matches, whatever the size of the table.
   */
  private facetPlan(
    shape: MatchShape,
    fields: readonly string[],
    matches: FoundMatches,
    heldEntriesMax: number,
  ): { plan: FacetPlan } | { plan: 'held'; fields: HeldField[] } {
    const count = ({ sql, params }: { sql: string; params: unknown[] }) =>
      this.queries
        .statement(sql)
        .pluck()
        .get(...params) as number;
    const tableId = shape.table.id;
    const stamp = this.stamp();
    const held = this.facetValues.held(tableId, fields, stamp);
    const perMatch = held ? FACET_HELD_ENTRIES_PER_MATCH : FACET_BY_VALUE_ENTRIES_PER_MATCH;
    const entriesUpTo = (matchesAtLeast: number) =>
      held
        ? held.reduce((sum, field) => sum + field.entries, 0)
        : this.facetValues.entriesAtLeast(
            tableId,
            fields,
            matchesAtLeast * perMatch + 1,
            stamp,
            (bound) => count(facetEntriesQuery(tableId, fields, bound)),
          );
    let matchesAtLeast = Math.min(matches.count, FACET_PLAN_MATCHES_COUNTED_MAX);
    let entries = entriesUpTo(matchesAtLeast);
    if (entries > matchesAtLeast * perMatch) {
      if (matches.exact) return { plan: 'byMatch' };
      matchesAtLeast = count(countQuery(shape, FACET_PLAN_MATCHES_COUNTED_MAX));
      entries = entriesUpTo(matchesAtLeast);
      if (entries > matchesAtLeast * perMatch) return { plan: 'byMatch' };
    }
    const loaded = held ?? this.facetValues.load(tableId, fields, stamp, entries, heldEntriesMax);
    return loaded ? { plan: 'held', fields: loaded } : { plan: 'byValue' };
  }

  /** The matches FTS5 walks for `query`, where they are known: of words with lists. */
  private walkedOf(shape: MatchShape, query: ParsedQuery): TopkMatches | null {
    return query.words === null ? null : this.topk.matchesOf(shape.table, query.words);
  }

  /**
   * FTS5 walks every match of a query: where they are known (`walked`), the filter is probed a
   * match where that costs less than gathering its rows (ProbedFilter.walkAccess).
   */
  private readFilterAs(shape: MatchShape, filter: ProbedFilter, walked: TopkMatches | null): void {
    if (walked !== null) shape.filterAccess = filter.walkAccess(walked.matches, walked.rows);
  }

  private matchShape(
    table: FtsTable,
    collection: string,
    partitions: readonly number[],
    query: ParsedQuery,
    filter: FilterNode | null,
  ): MatchShape {
    const asked = this.partitionsAsked(collection, partitions);
    return { table, match: query.match, partitions: asked, filter };
  }

  /**
   * The partitions of a read of `collection` as its SQL needs them (partitionsParam). A row is
   * written only in the transaction that moves its partition's checkpoint, so the partitions
   * with a checkpoint here are all those the collection's table can hold rows of. A serve-node
   * asked for a subset of what it hosts (a gateway reading others from another replica) keeps
   * the condition.
   */
  private partitionsAsked(collection: string, partitions: readonly number[]): string | null {
    const stamp = this.stamp();
    if (stamp !== this.checkpointedRead.stamp) this.checkpointedRead = { stamp, of: new Map() };
    let held = this.checkpointedRead.of.get(collection);
    if (held === undefined) {
      held = this.queries.statement(CHECKPOINTED_PARTITIONS).pluck().all(collection) as number[];
      this.checkpointedRead.of.set(collection, held);
    }
    return partitionsParam(held, partitions);
  }
}

interface SearchRow {
  row: number;
  score: number;
  key: string;
  [column: `k${number}` | `v${number}`]: number | string | null;
}

/** The sort values of a row: v<i> where the document has one (k<i> is its kind), else null. */
function sortValuesOf(row: SearchRow, clauses: number): SortValues {
  const values: SortValues = [];
  for (let i = 0; i < clauses; i++) values.push(row[`k${i}`] === null ? null : row[`v${i}`]);
  return values;
}
