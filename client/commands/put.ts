/** `tailbase put <collection> <key> [json]`: writes one document, from the argument or stdin. */
import type { Command } from 'commander';
import {
  addWriteOptions,
  clientAction,
  clientCommand,
  collectionName,
  documentKey,
  readStdin,
  writeOptionsOf,
} from '../command-kit.js';
import type { WriteAnswer } from '../sdk/index.js';
import { type ClientIo, UsageError } from '../io.js';

/** Well above the gateway's documentBytesMax (1 MiB): the gateway names the limit, not us. */
const STDIN_BYTES_MAX = 64 * 1024 * 1024;

export function printWrite(
  session: { json: boolean; print(text: string): void },
  verb: string,
  collection: string,
  result: WriteAnswer,
) {
  session.print(
    session.json
      ? JSON.stringify(result)
      : `${verb} ${collection}/${result.key} at partition ${result.partition} offset ${result.offset}`,
  );
}

export function registerPutCommand(program: Command, io: ClientIo): void {
  addWriteOptions(clientCommand(program, io, 'put'))
    .description('write a JSON document (from the argument, or stdin when it is left out)')
    .argument('<collection>', 'collection name', collectionName)
    .argument('<key>', 'document key', documentKey)
    .argument('[json]', 'the document; read from stdin when absent')
    .action(
      clientAction(io, async (session, [collection, key, argument], flags) => {
        let text = argument;
        if (text === undefined) {
          if (io.stdin.isTTY) throw new UsageError('give the document as an argument or on stdin');
          text = await readStdin(io, STDIN_BYTES_MAX);
        }
        try {
          JSON.parse(text);
        } catch (error) {
          throw new UsageError(`the document is not JSON: ${(error as Error).message}`);
        }
        printWrite(
          session,
          'put',
          collection,
          await session.client.collection(collection).putJson(key, text, writeOptionsOf(flags)),
        );
      }),
    );
}
