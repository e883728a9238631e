/** Helpers the node commands share: integer flags with env variables, loopback checks, shutdown. */
import { InvalidArgumentError, Option } from 'commander';
import { flushLogs, type Logger } from './logger.js';

export function parseInteger(raw: string): number {
  if (!/^-?\d+$/.test(raw.trim())) throw new InvalidArgumentError('expected an integer');
  const value = Number(raw);
  if (!Number.isSafeInteger(value)) throw new InvalidArgumentError('integer out of range');
  return value;
}

export function integerOption(
  flags: string,
  description: string,
  env: string,
  defaultValue?: number,
): Option {
  const option = new Option(flags, description).env(env).argParser(parseInteger);
  return defaultValue === undefined ? option : option.default(defaultValue);
}

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host.startsWith('127.');
}

/** SIGTERM or Ctrl-C: stop cleanly once (in-flight writes finish and are fsynced); twice: exit. */
export function onShutdownSignal(logger: Logger, stop: () => Promise<void>): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) {
      flushLogs();
      process.exit(130);
    }
    stopping = true;
    logger.info({ signal }, 'shutting down');
    stop().then(
      () => {
        logger.info('stopped');
        flushLogs();
        process.exit(0);
      },
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        flushLogs();
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}

/** `documentBytesMax` → `document-bytes-max`. */
const kebab = (name: string) => name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/**
 * One integer flag per limit `help` describes, named from it (`documentBytesMax` →
 * `--document-bytes-max`, `TAILBASE_DOCUMENT_BYTES_MAX`), defaulting to its value in `defaults`.
 * With `limitValues`, every limit is configurable without a flag written by hand.
 */
export function limitOptions<K extends string>(
  help: Record<K, string>,
  defaults: { readonly [P in NoInfer<K>]: number },
): Option[] {
  return (Object.keys(help) as K[]).map((name) => {
    const flag = kebab(name);
    return integerOption(
      `--${flag} <n>`,
      help[name],
      `TAILBASE_${flag.replace(/-/g, '_').toUpperCase()}`,
      defaults[name],
    );
  });
}

/** The values commander parsed for `limitOptions(help, …)`. */
export function limitValues<K extends string>(
  help: Record<K, string>,
  flags: Record<string, unknown>,
): Record<K, number> {
  return Object.fromEntries(
    Object.keys(help).map((name) => [name, flags[name] as number]),
  ) as Record<K, number>;
}
