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

export function processIo(): ClientIo {
  return {
    stdout: process.stdout,
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
