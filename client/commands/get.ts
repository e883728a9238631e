/** `tailbase get <collection> <key>`: the document, pretty-printed (or the whole answer as JSON). */
import type { Command } from 'commander';
import {
  addReadOptions,
  clientAction,
  clientCommand,
  collectionName,
  documentKey,
  readOptionsOf,
} from '../command-kit.js';
import type { ClientIo } from '../io.js';

export function registerGetCommand(program: Command, io: ClientIo): void {
  addReadOptions(clientCommand(program, io, 'get'))
    .description('read one document (waits for the stored token, so it sees your own writes)')
    .argument('<collection>', 'collection name', collectionName)
    .argument('<key>', 'document key', documentKey)
    .action(
      clientAction(io, async (session, [collection, key], flags) => {
        const doc = await session.client.collection(collection).get(key, readOptionsOf(flags));
        session.print(session.json ? JSON.stringify(doc) : JSON.stringify(doc.value, null, 2));
      }),
    );
}
