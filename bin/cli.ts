/** The `tailbase` command: one subcommand per node role, and the client commands. */
import { Command } from 'commander';
import { registerLogNodeCommand } from '../log-node/main.js';

export async function main(argv: string[]): Promise<void> {
  const program = new Command('tailbase')
    .description(
      'a database built as The Log describes: a durable log and serving nodes that tail it',
    )
    .showHelpAfterError();
  registerLogNodeCommand(program);
  try {
    await program.parseAsync(argv);
  } catch (error) {
    process.stderr.write(`tailbase: ${(error as Error).message}\n`);
    process.exit(1);
  }
}
