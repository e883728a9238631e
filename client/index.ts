/**
 * The client side of the `tailbase` command, against a gateway's public API (--url), built on
 * the typed client (sdk/, the package's entry point).
 */
import type { Command } from 'commander';
import { registerBulkCommand } from './commands/bulk.js';
import { registerCollectionsCommands } from './commands/collections.js';
import { registerViewCommands } from './commands/view.js';
import { registerDelCommand } from './commands/del.js';
import { registerGetCommand } from './commands/get.js';
import { registerPutCommand } from './commands/put.js';
import { registerRebuildCommand } from './commands/rebuild.js';
import { registerScanCommand } from './commands/scan.js';
import { registerSearchCommand } from './commands/search.js';
import { registerSettingsCommand } from './commands/settings.js';
import { registerStatusCommand } from './commands/status.js';
import { registerTailCommand } from './commands/tail.js';
import { type ClientIo, processIo } from './io.js';

export * from './sdk/index.js';
export { TokenStore, tokenStorePath } from './token-store.js';
export type { ClientIo } from './io.js';

/**
 * Adds put, get, del, scan, search, bulk, tail, settings, collections, drop, status and rebuild
 * to the program.
 */
export function registerClientCommands(program: Command, io: ClientIo = processIo()): void {
  registerPutCommand(program, io);
  registerGetCommand(program, io);
  registerDelCommand(program, io);
  registerScanCommand(program, io);
  registerSearchCommand(program, io);
  registerBulkCommand(program, io);
  registerTailCommand(program, io);
  registerSettingsCommand(program, io);
  registerCollectionsCommands(program, io);
  registerViewCommands(program, io);
  registerStatusCommand(program, io);
  registerRebuildCommand(program, io);
}
