/** The `tailbase` command: one subcommand per node role, the local cluster, and the client. */
import { Command } from 'commander';
import { flushLogs } from '../shared/logger.js';
import { tailbaseVersion } from '../shared/package-root.js';
import { registerClientCommands } from '../client/index.js';
import { registerGatewayCommand } from '../gateway/main.js';
import { registerLogNodeCommand } from '../log-node/main.js';
import { registerServeNodeCommand } from '../serve-node/main.js';
import { registerStartCommand } from './embedded.js';
import { registerClusterCommand } from './local-cluster.js';
import { serveNodeViews } from './serve-node-views.js';
import { startThreadedServeNode } from './serve-node-threads.js';

export async function main(argv: string[]): Promise<void> {
  const program = new Command('tailbase')
    .description(
      'a database built as The Log describes: a durable log and serving nodes that tail it',
    )
    .version(tailbaseVersion(), '-V, --version', 'print the version')
    .showHelpAfterError();
  registerStartCommand(program);
  registerLogNodeCommand(program);
  registerServeNodeCommand(program, startThreadedServeNode, serveNodeViews);
  registerGatewayCommand(program);
  registerClusterCommand(program);
  registerClientCommands(program);
  try {
    await program.parseAsync(argv);
  } catch (error) {
    flushLogs();
    process.stderr.write(`tailbase: ${(error as Error).message}\n`);
    process.exit(1);
  }
}
