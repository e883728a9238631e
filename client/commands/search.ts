/** `tailbase search <collection> <query>`: ranked full-text hits as a table (or JSON). */
import type { Command } from 'commander';
import {
  addReadOptions,
  clientAction,
  clientCommand,
  collectionName,
  integerAtLeast,
  readOptionsOf,
} from '../command-kit.js';
import { formatTable, summarizeJson, valueWidth } from '../format.js';
import type { JsonValue, SearchResult } from '../sdk/index.js';
import type { ClientIo } from '../io.js';

export function formatHits(
  result: SearchResult<JsonValue>,
  from: number,
  columns: number | undefined,
) {
  const keyChars = Math.max(3, ...result.hits.map((hit) => [...hit.key].length));
  const width = valueWidth(columns, keyChars + 20);
  return formatTable(
    ['#', 'SCORE', 'KEY', 'VALUE'],
    result.hits.map((hit, index) => [
      from + index + 1,
      hit.score.toPrecision(3),
      hit.key,
      summarizeJson(hit.highlights ?? hit.value, width),
    ]),
  );
}

export function registerSearchCommand(program: Command, io: ClientIo): void {
  addReadOptions(clientCommand(program, io, 'search'))
    .description('full-text search, ranked by BM25')
    .argument('<collection>', 'collection name', collectionName)
    .argument('<query>')
    .option('--limit <n>', 'hits to return', integerAtLeast(1))
    .option('--offset <n>', 'hits to skip', integerAtLeast(0))
    .option('--highlight', 'show the matching fields with <mark></mark>', false)
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
        io.stdout.write(formatHits(result, offset ?? 0, io.stdout.columns));
        session.note(`${result.hits.length} of ${result.total} hits`);
      }),
    );
}
