import { isatty } from 'node:tty';
import { isMainThread } from 'node:worker_threads';
import { pino, type Logger } from 'pino';
import { prettyFactory } from 'pino-pretty';

export type { Logger };

export const LOG_FORMATS = ['json', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** Logs go to stderr (fd 2); stdout carries what commands print. */
const LOG_FD = 2;

/**
 * `TAILBASE_LOG_FORMAT` (json | pretty) when set; otherwise pretty lines for a person at a
 * terminal and JSON for a pipe or a file, where a machine reads them.
 */
export function chooseLogFormat(setting: string | undefined, terminal: boolean): LogFormat {
  if (setting === undefined || setting === '') return terminal ? 'pretty' : 'json';
  if (!(LOG_FORMATS as readonly string[]).includes(setting)) {
    throw new Error(`TAILBASE_LOG_FORMAT must be one of ${LOG_FORMATS.join(', ')}, not ${setting}`);
  }
  return setting as LogFormat;
}

/**
 * One stderr stream for every logger of the process, so one flush covers them all. isatty looks
 * at the file descriptor itself: a worker thread's process.stderr is a pipe to the main thread
 * whatever fd 2 is.
 */
let destination: ReturnType<typeof pino.destination> | null = null;
let output: pino.DestinationStream | null = null;

function sharedOutput(): pino.DestinationStream {
  if (output !== null) return output;
  const terminal = isatty(LOG_FD);
  const format = chooseLogFormat(process.env.TAILBASE_LOG_FORMAT, terminal);
  // A worker thread writes synchronously: an asynchronous write still queued in libuv's pool
  // (full of fsyncs on a loaded node) is cancelled when the main thread terminates the worker,
  // and flushSync leaves a write in flight to that pool. A process exit waits for the pool.
  const dest = pino.destination({ dest: LOG_FD, sync: !isMainThread });
  destination = dest;
  if (format === 'json') return (output = dest);
  // pino-pretty's formatter run in this thread into the same destination (not its transport's
  // worker thread), so flushLogs still writes out every line before an exit.
  const prettify = prettyFactory({
    colorize: terminal && process.env.NO_COLOR === undefined,
    translateTime: 'SYS:HH:MM:ss',
    ignore: 'pid,hostname,name,role,component',
    messageFormat: (log, messageKey) => {
      const source = [log.role, log.component].filter((part) => typeof part === 'string');
      const message = String(log[messageKey] ?? '');
      return source.length === 0 ? message : `${source.join(' ')}: ${message}`;
    },
    singleLine: true,
  });
  return (output = { write: (line: string) => dest.write(prettify(line)) });
}

/** pino's own levels, most severe first, and `silent`. */
const LEVELS = [
  ...Object.entries(pino.levels.values)
    .sort(([, a], [, b]) => b - a)
    .map(([name]) => name),
  'silent',
];

/**
 * Logs on stderr, as JSON or pretty lines (chooseLogFormat); TAILBASE_LOG_LEVEL (default info,
 * `silent` in tests) sets the level.
 */
export function createLogger(
  name: string,
  level = process.env.TAILBASE_LOG_LEVEL ?? 'info',
): Logger {
  if (!LEVELS.includes(level)) {
    throw new Error(`TAILBASE_LOG_LEVEL must be one of ${LEVELS.join(', ')}, not ${level}`);
  }
  return pino({ name, level }, sharedOutput());
}

/** Writes out buffered log lines; call before process.exit or they are lost. */
export function flushLogs(): void {
  destination?.flushSync();
}
