import { pino, type Logger } from 'pino';

export type { Logger };

/** JSON logs on stderr; TAILBASE_LOG_LEVEL (default info, `silent` in tests) sets the level. */
export function createLogger(
  name: string,
  level = process.env.TAILBASE_LOG_LEVEL ?? 'info',
): Logger {
  return pino({ name, level }, pino.destination({ dest: 2, sync: false }));
}
