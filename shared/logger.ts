import { pino, type Logger } from 'pino';

export type { Logger };

/** One stderr stream for every logger of the process, so one flush covers them all. */
let destination: ReturnType<typeof pino.destination> | null = null;

function sharedDestination(): ReturnType<typeof pino.destination> {
  destination ??= pino.destination({ dest: 2, sync: false });
  return destination;
}

/** pino's own levels, most severe first, and `silent`. */
const LEVELS = [
  ...Object.entries(pino.levels.values)
    .sort(([, a], [, b]) => b - a)
    .map(([name]) => name),
  'silent',
];

/** JSON logs on stderr; TAILBASE_LOG_LEVEL (default info, `silent` in tests) sets the level. */
export function createLogger(
  name: string,
  level = process.env.TAILBASE_LOG_LEVEL ?? 'info',
): Logger {
  if (!LEVELS.includes(level)) {
    throw new Error(`TAILBASE_LOG_LEVEL must be one of ${LEVELS.join(', ')}, not ${level}`);
  }
  return pino({ name, level }, sharedDestination());
}

/** Writes out buffered log lines; call before process.exit or they are lost. */
export function flushLogs(): void {
  destination?.flushSync();
}
