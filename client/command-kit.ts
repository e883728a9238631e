/**
 * What every client command shares: the flags that pick the gateway and the output, a session
 * whose token is loaded from and saved to the token store, and one way to end: exit code 0, 1
 * when a request failed (the server's message printed), 2 for a usage error.
 */
import { type Command, InvalidArgumentError, Option } from 'commander';
import { parseInteger } from '../shared/cli-options.js';
import { COLLECTION_PATTERN } from '../shared/collection-name.js';
import { TailbaseError } from '../shared/errors.js';
import {
  CONSISTENCY_LEVELS,
  type Consistency,
  REQUEST_TIMEOUT_MS_DEFAULT,
  Tailbase,
  type WriteOptions,
} from './sdk/index.js';
import { type ClientIo, EXIT_FAILED, EXIT_OK, EXIT_USAGE, UsageError } from './io.js';
import { TokenStore, tokenStorePath } from './token-store.js';

export const URL_DEFAULT = 'http://127.0.0.1:8080';

export interface CommonFlags {
  url: string;
  json: boolean;
  apiKey?: string;
  token?: string;
  timeoutMs: number;
}

export interface ReadFlags {
  consistency?: Consistency;
  waitMs?: number;
}

export interface Session {
  client: Tailbase;
  io: ClientIo;
  json: boolean;
  /** Writes one line to stdout. */
  print(text: string): void;
  /** Writes one line to stderr: notes and warnings that are not the command's result. */
  note(text: string): void;
}

export function parseHttpUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new InvalidArgumentError('expected a URL such as http://127.0.0.1:8080');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new InvalidArgumentError('expected an http:// or https:// URL');
  }
  return raw.replace(/\/+$/, '');
}

export function integerAtLeast(min: number): (raw: string) => number {
  return (raw) => {
    const value = parseInteger(raw);
    if (value < min) throw new InvalidArgumentError(`expected an integer >= ${min}`);
    return value;
  };
}

/**
 * A document key as a command argument: empty, `.` and `..` are refused before anything is sent,
 * since no URL can address them (a URL parser folds `.` and `..` away; the gateway refuses them
 * in bulk for the same reason).
 */
export function documentKey(raw: string): string {
  if (raw === '') throw new InvalidArgumentError('a key may not be empty');
  if (raw === '.' || raw === '..') {
    throw new InvalidArgumentError(`a key may not be "${raw}": a URL path cannot address it`);
  }
  return raw;
}

/** A collection name as a command argument, checked as every node checks it before anything is sent. */
export function collectionName(raw: string): string {
  if (!COLLECTION_PATTERN.test(raw)) {
    throw new InvalidArgumentError(`a collection name must match ${COLLECTION_PATTERN.source}`);
  }
  return raw;
}

/** A subcommand with the client flags, whose usage errors exit 2 and print to io. */
export function clientCommand(program: Command, io: ClientIo, nameAndArgs: string): Command {
  return program
    .command(nameAndArgs)
    .addOption(
      new Option('--url <url>', 'gateway URL')
        .env('TAILBASE_URL')
        .default(URL_DEFAULT)
        .argParser(parseHttpUrl),
    )
    .option('--json', 'print JSON instead of text', false)
    .addOption(
      new Option('--api-key <key>', 'API key, sent as a bearer token').env('TAILBASE_API_KEY'),
    )
    .addOption(
      new Option('--token <token>', 'session token to send instead of the stored one').env(
        'TAILBASE_TOKEN',
      ),
    )
    .addOption(
      new Option('--timeout-ms <ms>', 'longest a request may take')
        .env('TAILBASE_TIMEOUT_MS')
        .default(REQUEST_TIMEOUT_MS_DEFAULT)
        .argParser(integerAtLeast(1)),
    )
    .configureOutput({
      writeOut: (text) => void io.stdout.write(text),
      writeErr: (text) => void io.stderr.write(text),
    })
    .exitOverride((error) => io.exit(error.exitCode === 0 ? EXIT_OK : EXIT_USAGE));
}

/** --consistency and --wait-ms, for the commands that read. */
export function addReadOptions(command: Command): Command {
  return command
    .addOption(
      new Option('--consistency <level>', 'token (default with a token), strong or eventual')
        .choices(CONSISTENCY_LEVELS)
        .env('TAILBASE_CONSISTENCY'),
    )
    .addOption(
      new Option('--wait-ms <ms>', 'longest the server waits for the token to be applied')
        .env('TAILBASE_WAIT_MS')
        .argParser(integerAtLeast(0)),
    );
}

/** --wait-applied [ms]: a write answers once every hosting serve-node has applied it. */
export function addWriteOptions(command: Command): Command {
  return command.addOption(
    new Option(
      '--wait-applied [ms]',
      'answer once every serve-node hosting the write has applied it, waiting at most ms',
    )
      .env('TAILBASE_WAIT_APPLIED')
      .argParser(integerAtLeast(0)),
  );
}

export function writeOptionsOf(flags: Record<string, unknown>): WriteOptions {
  const wait = flags.waitApplied as number | true | undefined;
  if (wait === undefined) return {};
  return { wait: 'applied', waitMs: wait === true ? undefined : wait };
}

function printError(io: ClientIo, json: boolean, error: unknown): number {
  if (error instanceof UsageError) {
    io.stderr.write(`tailbase: ${error.message}\n`);
    return EXIT_USAGE;
  }
  if (error instanceof TailbaseError) {
    if (json) {
      const body = { ...error.toBody().error, status: error.status };
      io.stderr.write(JSON.stringify({ error: body }) + '\n');
    } else {
      const details = Object.keys(error.details).length ? ` ${JSON.stringify(error.details)}` : '';
      io.stderr.write(
        `tailbase: ${error.message} (${error.code}${details ? ',' : ''}${details})\n`,
      );
    }
    return EXIT_FAILED;
  }
  io.stderr.write(`tailbase: ${(error as Error).message ?? String(error)}\n`);
  return EXIT_FAILED;
}

export type ClientHandler = (
  session: Session,
  args: string[],
  flags: Record<string, unknown>,
) => Promise<void>;

/**
 * The commander action of a client command: opens a session with the stored token for --url
 * (or --token), runs the handler, saves the latest token the gateway answered with, and sets
 * the exit code.
 */
export function clientAction(io: ClientIo, handler: ClientHandler) {
  return async (...received: unknown[]): Promise<void> => {
    const command = received.at(-1) as Command;
    const flags = command.opts() as CommonFlags & Record<string, unknown>;
    const args = received.slice(0, -2) as string[];
    const store = new TokenStore(tokenStorePath(io.env));
    const note = (text: string) => void io.stderr.write(`${text}\n`);
    const stored = flags.token === undefined ? store.get(flags.url) : undefined;
    const started = flags.token ?? stored;
    const client = new Tailbase({
      url: flags.url,
      token: started,
      apiKey: flags.apiKey,
      requestTimeoutMs: flags.timeoutMs,
      onInvalidToken: (error) => {
        if (flags.token !== undefined) return false;
        note(`tailbase: dropped the stored token for ${flags.url}: ${error.message}`);
        return true;
      },
    });
    const session: Session = {
      client,
      io,
      json: flags.json,
      print: (text) => void io.stdout.write(`${text}\n`),
      note,
    };
    let code = EXIT_OK;
    try {
      await handler(session, args, flags);
    } catch (error) {
      code = printError(io, flags.json, error);
    }
    if (flags.token === undefined && client.token !== started) {
      try {
        store.set(flags.url, client.token);
      } catch (error) {
        note(`tailbase: could not save the token in ${store.file}: ${(error as Error).message}`);
      }
    }
    io.setExitCode(code);
  };
}

export function readOptionsOf(flags: Record<string, unknown>): ReadFlags {
  return {
    consistency: flags.consistency as Consistency | undefined,
    waitMs: flags.waitMs as number | undefined,
  };
}

/** Reads all of stdin as text, refusing more than bytesMax. */
export async function readStdin(io: ClientIo, bytesMax: number): Promise<string> {
  const pieces: Buffer[] = [];
  let bytes = 0;
  for await (const piece of io.stdin) {
    const buffer = typeof piece === 'string' ? Buffer.from(piece) : piece;
    bytes += buffer.length;
    if (bytes > bytesMax) throw new UsageError(`stdin holds more than ${bytesMax} bytes`);
    pieces.push(buffer);
  }
  return Buffer.concat(pieces).toString('utf8');
}
