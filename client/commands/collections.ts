/**
 * `tailbase collections`: every collection with its partitions, records, documents, bytes on disk
 * (the log's, LMDB's, SQLite's and their total; `-` where the cluster cannot say) and settings
 * version. `tailbase drop <collection> --yes`: drops one (its documents, settings and topic go).
 */
import type { Command } from 'commander';
import { clientAction, clientCommand, collectionName } from '../command-kit.js';
import { formatBytes, formatTable } from '../format.js';
import { type ClientIo, UsageError } from '../io.js';

export function registerCollectionsCommands(program: Command, io: ClientIo): void {
  clientCommand(program, io, 'collections')
    .description(
      'list the collections: partitions, records, documents, bytes on disk, settings version',
    )
    .action(
      clientAction(io, async (session) => {
        const collections = await session.client.collections();
        if (session.json) {
          session.print(JSON.stringify(collections));
          return;
        }
        io.stdout.write(
          formatTable(
            [
              'COLLECTION',
              'PARTITIONS',
              'RECORDS',
              'DOCUMENTS',
              'LOG',
              'LMDB',
              'SQLITE',
              'TOTAL',
              'SETTINGS VERSION',
            ],
            collections.map((c) => [
              c.collection,
              c.partitions,
              c.records,
              c.documents,
              formatBytes(c.bytes.log),
              formatBytes(c.bytes.lmdb),
              formatBytes(c.bytes.sqlite),
              formatBytes(c.bytes.total),
              c.settingsVersion,
            ]),
          ),
        );
      }),
    );

  clientCommand(program, io, 'drop')
    .description('drop a collection: its documents, settings and topic go (admin scope)')
    .argument('<collection>', 'collection name', collectionName)
    .option('--yes', 'really drop it: there is no undo')
    .action(
      clientAction(io, async (session, [collection], flags) => {
        if (!flags.yes) throw new UsageError(`dropping ${collection} cannot be undone: add --yes`);
        const answer = await session.client.collection(collection).drop();
        session.print(session.json ? JSON.stringify(answer) : `dropped ${collection}`);
      }),
    );
}
