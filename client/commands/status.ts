/** `tailbase status`: partitions, log offsets, and each serve-node's applied offsets and lag. */
import type { Command } from 'commander';
import { clientAction, clientCommand } from '../command-kit.js';
import type { ClientIo } from '../io.js';
import { formatStatus, readStatus } from '../status-view.js';

export function registerStatusCommand(program: Command, io: ClientIo): void {
  clientCommand(program, io, 'status')
    .description('partitions, log offsets, and each serve-node applied offsets and lag')
    .action(
      clientAction(io, async (session) => {
        const body = await session.client.status();
        if (session.json) {
          session.print(JSON.stringify(body));
          return;
        }
        const view = readStatus(body);
        if (view.replicas.length === 0 && view.serveNodes.length === 0) {
          session.note('tailbase: the status answer has no partitions; printing it as it came');
          session.print(JSON.stringify(body, null, 2));
          return;
        }
        io.stdout.write(formatStatus(view));
      }),
    );
}
