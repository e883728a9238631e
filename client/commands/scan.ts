/**
 * `tailbase scan <collection>`: documents in key order, one page (`--limit`) or, with `--all`,
 * every page by following the cursor.
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
import { formatTable, summarizeJson, valueWidth } from '../format.js';
import type { Document, JsonValue, ScanOptions } from '../sdk/index.js';
import type { ClientIo } from '../io.js';

/** Bounds `--all`: past this many pages the scan stops and says where to resume. */
export const SCAN_PAGES_MAX = 10_000;

export function formatDocuments(
  items: readonly Document<JsonValue>[],
  columns: number | undefined,
): string {
  // Loops, not Math.max(...items): spreading 100k+ items into arguments overflows the stack.
  const keyChars = items.reduce((widest, item) => Math.max(widest, [...item.key].length), 3);
  const offsetChars = items.reduce(
    (widest, item) => Math.max(widest, String(item.offset).length),
    6,
  );
  const width = valueWidth(columns, keyChars + offsetChars + 4);
  return formatTable(
    ['KEY', 'OFFSET', 'VALUE'],
    items.map((item) => [item.key, item.offset, summarizeJson(item.value, width)]),
  );
}

export function registerScanCommand(program: Command, io: ClientIo): void {
  addReadOptions(clientCommand(program, io, 'scan'))
    .description('list documents in key order')
    .argument('<collection>', 'collection name', collectionName)
    .option('--prefix <prefix>', 'only keys that start with prefix')
    .option('--start <key>', 'first key (inclusive)')
    .option('--end <key>', 'last key (exclusive)')
    .option('--limit <n>', 'documents per page', integerAtLeast(1))
    .option('--cursor <cursor>', 'resume where a previous page ended')
    .option('--filter <filter>', 'only documents that match: "year >= 2000 AND genre = sf"')
    .option('--sort <fields>', 'order by sortable fields instead of keys: "year:desc,title:asc"')
    .option('--all', 'follow the cursor to the end of the range', false)
    .action(
      clientAction(io, async (session, [collection], flags) => {
        const options: ScanOptions = {
          prefix: flags.prefix as string | undefined,
          start: flags.start as string | undefined,
          end: flags.end as string | undefined,
          limit: flags.limit as number | undefined,
          cursor: flags.cursor as string | undefined,
          filter: flags.filter as string | undefined,
          sort: flags.sort as string | undefined,
          ...readOptionsOf(flags),
        };
        const items: Document<JsonValue>[] = [];
        let cursor: string | null = null;
        for (let pages = 0; ; pages++) {
          if (pages === SCAN_PAGES_MAX) {
            session.note(`tailbase: stopped after ${pages} pages; resume with --cursor ${cursor}`);
            break;
          }
          const page = await session.client.collection(collection).scanPage(options);
          for (const item of page.items) items.push(item);
          cursor = page.cursor;
          if (!flags.all || cursor === null) break;
          options.cursor = cursor;
        }
        if (session.json) {
          session.print(JSON.stringify({ items, cursor }));
          return;
        }
        io.stdout.write(formatDocuments(items, io.stdout.columns));
        const more = cursor === null ? '' : `; more with --cursor ${cursor}`;
        session.note(`${items.length} document${items.length === 1 ? '' : 's'}${more}`);
      }),
    );
}
