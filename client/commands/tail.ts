/** `tailbase tail`: follows the change feed and prints each event as it arrives. */
import { type Command, Option } from 'commander';
import { clientAction, clientCommand, collectionName, integerAtLeast } from '../command-kit.js';
import { summarizeJson, valueWidth } from '../format.js';
import {
  type ChangeLine,
  FEED_BACKOFF_MS_FIRST,
  FEED_BACKOFF_MS_MAX,
  FEED_RECONNECTS_MAX_DEFAULT,
  isReset,
} from '../sdk/index.js';
import type { ClientIo } from '../io.js';

export const RECONNECTS_MAX_DEFAULT = FEED_RECONNECTS_MAX_DEFAULT;

/**
 * One line of the feed as a person reads it; a view's reset says what it means: what was printed
 * of the view before it is of a version that no longer serves.
 */
export function formatChange(event: ChangeLine, columns: number | undefined): string {
  if (isReset(event)) {
    return `reset  ${event.collection}  (version ${event.version} follows from its start; forget what came before)`;
  }
  const head = `${event.partition}:${event.offset}  ${event.collection}/${event.key}`;
  const body =
    event.value === null
      ? '(deleted)'
      : summarizeJson(event.value, valueWidth(columns, head.length + 2));
  return `${head}  ${body}`;
}

export function registerTailCommand(program: Command, io: ClientIo): void {
  clientCommand(program, io, 'tail')
    .description('follow the change feed')
    .option('--collection <collection>', 'only this collection', collectionName)
    .addOption(
      new Option('--from <where>', 'start, now, or a token from an earlier event').default('now'),
    )
    .option('--limit <n>', 'stop after n events', integerAtLeast(1))
    .addOption(
      new Option('--reconnects <n>', 'failed connections in a row before giving up')
        .env('TAILBASE_RECONNECTS_MAX')
        .default(RECONNECTS_MAX_DEFAULT)
        .argParser(integerAtLeast(0)),
    )
    .action(
      clientAction(io, async (session, _args, flags) => {
        const from = flags.from as string;
        const stop = new AbortController();
        const interrupted = () => stop.abort();
        process.once('SIGINT', interrupted);
        try {
          const events = session.client.changes({
            collection: flags.collection as string | undefined,
            ...(from === 'start' || from === 'now' ? { from } : { token: from }),
            limit: flags.limit as number | undefined,
            reconnectsMax: flags.reconnects as number,
            backoffMsFirst: FEED_BACKOFF_MS_FIRST,
            backoffMsMax: FEED_BACKOFF_MS_MAX,
            signal: stop.signal,
            onReconnect: (attempt, error) =>
              session.note(`tailbase: reconnecting (${attempt}): ${(error as Error).message}`),
          });
          for await (const event of events) {
            session.print(
              session.json ? JSON.stringify(event) : formatChange(event, io.stdout.columns),
            );
          }
        } finally {
          process.removeListener('SIGINT', interrupted);
        }
      }),
    );
}
