/**
 * PostgreSQL doing the filters group's queries (filters.ts) over the same documents: the search
 * table of peer-postgres.ts (tsvector + GIN, and B-tree indexes on year and genre), the same
 * filter, the same ORDER BY, and the facet counts as one GROUP BY GROUPING SETS over the matches.
 * Each query returns what tailbase's does: the top 10 documents and the count of every match.
 */
import { RARE_YEAR, WIDE_QUERY, type FieldDoc } from './filter-fields.js';
import { runPostgres, searchTableSetup, TERM_QUERY, termScript } from './peer-postgres.js';
import type { PgRun } from './peer-postgres.js';
import type { WorkloadResult } from './types.js';
import { CONNECTIONS } from './workload.js';

/** Loading several copies of the corpus and building its GIN index takes longer than one. */
const SETUP_MS_MAX = 180_000;

/** The names of PostgreSQL's rows, by the tailbase row each does the same work as. */
export const POSTGRES_ROWS = {
  search: 'postgres search',
  filtered: 'postgres search filtered 1%',
  sorted: 'postgres search sorted',
  wide: 'postgres search wide',
  facets: 'postgres search wide + 2 facets',
} as const;

const WIDE = `plainto_tsquery('simple', '${WIDE_QUERY}')`;

/** Top 10 with the documents and the count of every match, `where` and `order` added. */
const topTen = (query: string, where: string, order: string) =>
  `SELECT key, title, body, year, genre, count(*) OVER () AS total FROM docs, ${query} q ` +
  `WHERE tsv @@ q${where} ORDER BY ${order} LIMIT 10;\n`;

const BY_RANK = 'ts_rank(tsv, q) DESC, key';

function runs(docs: number, terms: number): PgRun[] {
  const over = `over ${docs} real documents, ${CONNECTIONS} clients`;
  return [
    {
      name: POSTGRES_ROWS.search,
      description: `tsvector + GIN, top 10 by ts_rank with count(*) of every match, one term, ${over}`,
      script: termScript(terms) + topTen(TERM_QUERY, '', BY_RANK),
      unit: 'queries/s',
    },
    {
      name: POSTGRES_ROWS.filtered,
      description: `as postgres search, AND year = ${RARE_YEAR} (B-tree on year, 1% of documents)`,
      script: termScript(terms) + topTen(TERM_QUERY, ` AND year = ${RARE_YEAR}`, BY_RANK),
      unit: 'queries/s',
    },
    {
      name: POSTGRES_ROWS.sorted,
      description: 'as postgres search, ORDER BY year DESC, ts_rank DESC, key',
      script: termScript(terms) + topTen(TERM_QUERY, '', `year DESC, ${BY_RANK}`),
      unit: 'queries/s',
    },
    {
      name: POSTGRES_ROWS.wide,
      description: `top 10 by ts_rank with count(*) of every match of '${WIDE_QUERY}', ${over}`,
      script: topTen(WIDE, '', BY_RANK),
      unit: 'queries/s',
    },
    {
      name: POSTGRES_ROWS.facets,
      description: `as postgres search wide, plus count(*) GROUP BY GROUPING SETS ((genre), (year)) over its matches`,
      script:
        topTen(WIDE, '', BY_RANK) +
        `SELECT genre, year, count(*) FROM docs WHERE tsv @@ ${WIDE} ` +
        'GROUP BY GROUPING SETS ((genre), (year));\n',
      unit: 'queries/s',
    },
  ];
}

export function runFiltersPostgres(
  binary: string,
  docs: readonly FieldDoc[],
  terms: string[],
  quick: boolean,
): Promise<WorkloadResult[]> {
  return runPostgres(binary, {
    group: 'filters',
    quick,
    setupMsMax: SETUP_MS_MAX,
    prepare: async (dir) => {
      const table = searchTableSetup(dir, docs, terms);
      return { ...table, runs: runs(docs.length, terms.length) };
    },
  });
}
