/**
 * `tailbase settings <collection> [json]`: without JSON, the collection's settings and topic
 * configs; with it, merges the fields it names into them (PATCH), or with --replace writes them
 * whole (PUT: what is left out goes back to its default).
 */
import type { Command } from 'commander';
import { clientAction, clientCommand, collectionName } from '../command-kit.js';
import type { SettingsBody } from '../sdk/index.js';
import { type ClientIo, UsageError } from '../io.js';

function parseBody(text: string): SettingsBody {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`the settings are not JSON: ${(error as Error).message}`);
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new UsageError('the settings are a JSON object');
  }
  return body as SettingsBody;
}

export function registerSettingsCommand(program: Command, io: ClientIo): void {
  clientCommand(program, io, 'settings')
    .description('show a collection settings, or merge the JSON given into them')
    .argument('<collection>', 'collection name', collectionName)
    .argument('[json]', 'settings to merge, like \'{"filterable":["year"]}\'')
    .option('--replace', 'write the settings whole: fields left out go back to their defaults')
    .action(
      clientAction(io, async (session, [collection, text], flags) => {
        const target = session.client.collection(collection);
        if (text === undefined) {
          if (flags.replace) throw new UsageError('--replace needs the settings as JSON');
          const view = await target.getSettings();
          session.print(JSON.stringify(view, null, session.json ? undefined : 2));
          return;
        }
        const body = parseBody(text);
        const answer = flags.replace
          ? await target.putSettings(body)
          : await target.patchSettings(body);
        session.print(
          session.json
            ? JSON.stringify(answer)
            : JSON.stringify(
                { settings: answer.settings, topicConfigs: answer.topicConfigs },
                null,
                2,
              ),
        );
      }),
    );
}
