/**
 * `tailbase search <collection> <query>`: ranked full-text hits as a table (or JSON), each with
 * the fields that matched and the matches marked (bold on a terminal), or its value when no
 * searchable field holds a match.
 */
import type { Command } from 'commander';
import {
  addReadOptions,
  clientAction,
  clientCommand,
  collectionName,
  integerAtLeast,
  readOptionsOf,
} from '../command-kit.js';
import { formatHighlights, formatTable, summarizeJson, valueWidth } from '../format.js';
import type { JsonValue, SearchResult } from '../sdk/index.js';
import type { ClientIo } from '../io.js';

export function formatHits(
  result: SearchResult<JsonValue>,
  from: number,
  columns: number | undefined,
  colour = false,
) {
  const keyChars = Math.max(3, ...result.hits.map((hit) => [...hit.key].length));
  const width = valueWidth(columns, keyChars + 20);
  return formatTable(
    // VALUE either way: the highlights are the value's matching fields, and scripts read the header.
    ['#', 'SCORE', 'KEY', 'VALUE'],
    result.hits.map((hit, index) => [
      from + index + 1,
      hit.score.toPrecision(3),
      hit.key,
      Object.keys(hit.highlights ?? {}).length > 0
        ? formatHighlights(hit.highlights ?? {}, width, colour)
        : summarizeJson(hit.value, width),
    ]),
  );
}

/** One line a facet field: its values by count, the number left out, and min/max for numbers. */
export function formatFacets(facets: NonNullable<SearchResult<JsonValue>['facets']>): string {
  return Object.entries(facets)
    .map(([field, facet]) => {
      const values = facet.values.map(({ value, count }) => `${JSON.stringify(value)} ${count}`);
      if (facet.omitted > 0) values.push(`(+${facet.omitted} more)`);
      const range = facet.min === undefined ? '' : `  [min ${facet.min}, max ${facet.max}]`;
      return `${field}: ${values.join(', ') || '(none)'}${range}\n`;
    })
    .join('');
}

export function registerSearchCommand(program: Command, io: ClientIo): void {
  addReadOptions(clientCommand(program, io, 'search'))
    .description('full-text search, ranked by BM25')
    .argument('<collection>', 'collection name', collectionName)
    .argument('<query>')
    .option('--limit <n>', 'hits to return', integerAtLeast(1))
    .option('--offset <n>', 'hits to skip', integerAtLeast(0))
    .option('--no-highlight', "show each hit's value instead of the fields that matched")
    .option('--filter <filter>', 'only hits that match: "year >= 2000 AND genre = sf"')
    .option('--sort <fields>', 'order by sortable fields instead of score: "year:desc"')
    .option('--facets <fields>', 'count the values of these fields over all matches: "genre,year"')
    .action(
      clientAction(io, async (session, [collection, query], flags) => {
        const offset = flags.offset as number | undefined;
        const result = await session.client.collection(collection).searchPage(query, {
          limit: flags.limit as number | undefined,
          offset,
          highlight: flags.highlight as boolean,
          filter: flags.filter as string | undefined,
          sort: flags.sort as string | undefined,
          facets: flags.facets as string | undefined,
          ...readOptionsOf(flags),
        });
        if (session.json) {
          session.print(JSON.stringify(result));
          return;
        }
        const colour = io.stdout.isTTY === true && io.env.NO_COLOR === undefined;
        io.stdout.write(formatHits(result, offset ?? 0, io.stdout.columns, colour));
        if (result.facets) io.stdout.write(formatFacets(result.facets));
        session.note(`${result.hits.length} of ${result.total} hits`);
      }),
    );
}
