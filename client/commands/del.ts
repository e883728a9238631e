/** `tailbase del <collection> <key>`: writes a tombstone. */
import type { Command } from 'commander';
import {
  addWriteOptions,
  clientAction,
  clientCommand,
  collectionName,
  documentKey,
  writeOptionsOf,
} from '../command-kit.js';
import type { ClientIo } from '../io.js';
import { printWrite } from './put.js';

export function registerDelCommand(program: Command, io: ClientIo): void {
  addWriteOptions(clientCommand(program, io, 'del'))
    .description('delete a document (writes a tombstone)')
    .argument('<collection>', 'collection name', collectionName)
    .argument('<key>', 'document key', documentKey)
    .action(
      clientAction(io, async (session, [collection, key], flags) => {
        printWrite(
          session,
          'deleted',
          collection,
          await session.client.collection(collection).delete(key, writeOptionsOf(flags)),
        );
      }),
    );
}
