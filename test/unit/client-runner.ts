/**
 * Runs the client commands in-process as one `tailbase` invocation each: a fresh program, the
 * token store read from and written to `home` like a separate process would, stdout, stderr and
 * the exit code captured.
 */
import { Readable } from 'node:stream';
import { Command } from 'commander';
import { registerClientCommands } from '../../client/index.js';
import type { ClientIo } from '../../client/io.js';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

class Exit extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}

export async function runCli(
  args: readonly string[],
  options: { home: string; stdin?: string; onStdout?: (stdout: string) => void },
): Promise<CliRun> {
  const run: CliRun = { code: 0, stdout: '', stderr: '' };
  const stdin = Object.assign(
    Readable.from(options.stdin === undefined ? [] : [Buffer.from(options.stdin)]),
    { isTTY: options.stdin === undefined },
  );
  const io: ClientIo = {
    stdout: {
      write: (text: string) => {
        run.stdout += text;
        options.onStdout?.(run.stdout);
      },
      isTTY: false,
      columns: 100,
    },
    stderr: { write: (text: string) => (run.stderr += text), isTTY: false },
    stdin,
    env: { TAILBASE_HOME: options.home },
    setExitCode: (code) => {
      run.code = code;
    },
    exit: (code) => {
      throw new Exit(code);
    },
  };
  const program = new Command('tailbase').exitOverride();
  registerClientCommands(program, io);
  try {
    await program.parseAsync([...args], { from: 'user' });
  } catch (error) {
    if (!(error instanceof Exit)) throw error;
    run.code = error.code;
  }
  return run;
}
