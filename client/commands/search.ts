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
import type { SearchResult } from '../http-client.js';
import type { ClientIo } from '../io.js';

export function formatHits(
  result: SearchResult,
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

export function registerSearchCommand(program: Command, io: ClientIo): void {
  addReadOptions(clientCommand(program, io, 'search'))
    .description('full-text search, ranked by BM25')
    .argument('<collection>', 'collection name', collectionName)
    .argument('<query>')
    .option('--limit <n>', 'hits to return', integerAtLeast(1))
    .option('--offset <n>', 'hits to skip', integerAtLeast(0))
    .option('--no-highlight', "show each hit's value instead of the fields that matched")
    .action(
      clientAction(io, async (session, [collection, query], flags) => {
        const offset = flags.offset as number | undefined;
        const result = await session.client.search(collection, query, {
          limit: flags.limit as number | undefined,
          offset,
          highlight: flags.highlight as boolean,
          ...readOptionsOf(flags),
        });
        if (session.json) {
          session.print(JSON.stringify(result));
          return;
        }
        const colour = io.stdout.isTTY === true && io.env.NO_COLOR === undefined;
        io.stdout.write(formatHits(result, offset ?? 0, io.stdout.columns, colour));
        session.note(`${result.hits.length} of ${result.total} hits`);
      }),
    );
}
