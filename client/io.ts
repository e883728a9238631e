/**
 * Where a command reads and writes, injected so tests run commands in-process: the streams, the
 * environment, and how the process ends.
 */
export interface OutputStream {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

export interface ClientIo {
  stdout: OutputStream;
  stderr: OutputStream;
  stdin: AsyncIterable<Buffer | string> & { isTTY?: boolean };
  env: Record<string, string | undefined>;
  /** The exit code once the command is done (0, 1 for a failed request, 2 for a usage error). */
  setExitCode(code: number): void;
  /** Ends at once: only for usage errors commander finds before any work has started. */
  exit(code: number): never;
}

export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

/**
 * The reader of stdout went away (`tailbase tail | head -2`): there is no one left to print for,
 * so the command stops quietly with exit 0, as `yes | head` does, instead of a write EPIPE trace.
 */
function stopWhenStdoutCloses(error: NodeJS.ErrnoException): void {
  if (error.code === 'EPIPE') process.exit(EXIT_OK);
  process.stderr.write(`tailbase: cannot write to stdout: ${error.message}\n`);
  process.exit(EXIT_FAILED);
}

/**
 * process.stdout, watched for a closed reader from the first write on: only a client command
 * writes through it, so a server role of the same binary keeps its own shutdown path.
 */
function processStdout(): OutputStream {
  return {
    write(text: string) {
      if (!process.stdout.listeners('error').includes(stopWhenStdoutCloses)) {
        process.stdout.on('error', stopWhenStdoutCloses);
      }
      return process.stdout.write(text);
    },
    get isTTY() {
      return process.stdout.isTTY;
    },
    get columns() {
      return process.stdout.columns;
    },
  };
}

export function processIo(): ClientIo {
  return {
    stdout: processStdout(),
    stderr: process.stderr,
    stdin: process.stdin,
    env: process.env,
    setExitCode: (code) => {
      process.exitCode = code;
    },
    exit: (code) => process.exit(code),
  };
}

/** A mistake in how the command was called: reported without contacting anything, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}
