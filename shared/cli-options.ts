/** Helpers the node commands share: integer flags with env variables, loopback checks, shutdown. */
import fs from 'node:fs';
import { isIP } from 'node:net';
import { InvalidArgumentError, Option } from 'commander';
import type { KafkaSaslPlain, KafkaTls } from './kafka-log/index.js';
import { topicSafetyDefaults } from './kafka-log/topic-safety.js';
import { checkLogUrls, type KafkaConnectOptions } from './log-connect.js';
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
  /** The least value accepted, when there is one. */
  min?: number,
  /** The greatest value accepted, when there is one. */
  max?: number,
): Option {
  const parse = (raw: string) => {
    const value = parseInteger(raw);
    if (min !== undefined && value < min)
      throw new InvalidArgumentError(`expected at least ${min}`);
    if (max !== undefined && value > max) throw new InvalidArgumentError(`expected at most ${max}`);
    return value;
  };
  const option = new Option(flags, description).env(env).argParser(parse);
  return defaultValue === undefined ? option : option.default(defaultValue);
}

/**
 * Five levels (a third of the weight of a thread at the process's own): during a bulk load of
 * 2*10^4 scale documents into `tailbase start` on the loaded 2-core machine (bench/load-reads.ts,
 * two rounds each, alternating), a key read's p99 45-53 ms against 78-90 at 0, /healthz's 31-32
 * against 51-60, and the load searchable at 669-702 documents/s against 451-647: the apply thread
 * is busy for the whole load and a read wants a core for well under a millisecond, so reads go
 * first and the apply loses next to nothing.
 */
export const APPLY_THREAD_NICE_DEFAULT = 5;

/** `--apply-thread-nice`: how far below the process the serve-node's apply thread runs. */
export function applyThreadNiceOption(): Option {
  return integerOption(
    '--apply-thread-nice <levels>',
    "nice levels the serve-node's apply thread runs below the process (Linux), so reads get a core first",
    'TAILBASE_APPLY_THREAD_NICE',
    APPLY_THREAD_NICE_DEFAULT,
    0,
  );
}

/** Kafka's own port, the default of every Kafka client's bootstrap address. */
export const KAFKA_PORT_DEFAULT = 9092;

/**
 * `--kafka-port`: a port (0 picks a free one) or `off` (kept as the string: commander turns a
 * parser's null into ''). `kafkaPortOf` reads the flag as a port or null, no listener.
 */
export function kafkaPortOption(): Option {
  return new Option('--kafka-port <port|off>', 'Kafka listener port, or off')
    .env('TAILBASE_KAFKA_PORT')
    .argParser((raw: string): number | 'off' => {
      if (raw.trim() === 'off') return 'off';
      const port = parseInteger(raw);
      if (port < 0 || port > 65_535) throw new InvalidArgumentError('expected 0..65535 or off');
      return port;
    })
    .default(KAFKA_PORT_DEFAULT);
}

/**
 * `--kafka-advertised-host` and `--kafka-advertised-port`: the address Kafka clients are told to
 * reconnect to (Metadata, FindCoordinator), when it is not the one they reached (NAT, a proxy).
 */
export function kafkaAdvertisedOptions(): Option[] {
  return [
    new Option('--kafka-advertised-host <host>', 'host Kafka clients are told to connect to').env(
      'TAILBASE_KAFKA_ADVERTISED_HOST',
    ),
    integerOption(
      '--kafka-advertised-port <port>',
      'port Kafka clients are told to connect to',
      'TAILBASE_KAFKA_ADVERTISED_PORT',
    ),
  ];
}

/** `--log`'s comma-separated Kafka bootstrap URLs (checkLogUrls), as each command's parser. */
export function parseLogUrls(raw: string): string[] {
  const urls = raw
    .split(',')
    .map((url) => url.trim())
    .filter(Boolean);
  try {
    checkLogUrls(urls);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
  return urls;
}

/**
 * How `--log kafka://...` is reached and its topics named: SASL/PLAIN credentials (a log-node's
 * listener takes an API key), TLS and the topic prefix.
 */
export function kafkaLogOptions(): Option[] {
  return [
    new Option(
      '--topic-prefix <prefix>',
      'put before every topic name on --log kafka:// (collection C is topic PREFIX + C), for a shared cluster',
    )
      .env('TAILBASE_TOPIC_PREFIX')
      .default(''),
    integerOption(
      '--kafka-partitions <n>',
      "a new collection topic's partitions on --log kafka://, where no collection topic exists yet and the brokers do not say their num.partitions",
      'TAILBASE_KAFKA_PARTITIONS',
      undefined,
      1,
    ),
    integerOption(
      '--kafka-replication-factor <n>',
      "a new topic's replication factor on --log kafka://, and the least an existing one may have",
      'TAILBASE_KAFKA_REPLICATION_FACTOR',
      topicSafetyDefaults.replicationFactor,
      1,
    ),
    integerOption(
      '--kafka-min-insync-replicas <n>',
      "a new topic's min.insync.replicas on --log kafka://, and the least an existing one may have",
      'TAILBASE_KAFKA_MIN_INSYNC_REPLICAS',
      topicSafetyDefaults.minInsyncReplicas,
      1,
    ),
    new Option(
      '--allow-unverified-topics',
      "go on where the Kafka cluster cannot say its topics' settings (no DescribeConfigs or CreateTopics)",
    ).env('TAILBASE_ALLOW_UNVERIFIED_TOPICS'),
    new Option('--kafka-sasl-username <name>', 'SASL/PLAIN username for --log kafka://').env(
      'TAILBASE_KAFKA_SASL_USERNAME',
    ),
    new Option(
      '--kafka-sasl-password <password>',
      "SASL/PLAIN password for --log kafka:// (a tailbase log-node's: an API key)",
    ).env('TAILBASE_KAFKA_SASL_PASSWORD'),
    new Option(
      '--kafka-tls',
      "TLS to the brokers of --log kafka://, each certificate verified and naming its broker's host",
    ).env('TAILBASE_KAFKA_TLS'),
    new Option(
      '--kafka-tls-ca <file>',
      "the PEM file of the CA that signed the brokers' certificates (a private CA), with --kafka-tls",
    ).env('TAILBASE_KAFKA_TLS_CA'),
  ];
}

/** What kafkaLogOptions' flags give. */
export function kafkaLogOf(flags: Record<string, unknown>): KafkaConnectOptions {
  return {
    sasl: kafkaSaslOf(flags),
    tls: kafkaTlsOf(flags),
    topicPrefix: flags.topicPrefix as string,
    partitions: flags.kafkaPartitions as number | undefined,
    replicationFactor: flags.kafkaReplicationFactor as number,
    minInsyncReplicas: flags.kafkaMinInsyncReplicas as number,
    allowUnverifiedTopics: flags.allowUnverifiedTopics === true,
  };
}

/** The credentials the flags give, or undefined; one without the other is an error. */
function kafkaSaslOf(flags: Record<string, unknown>): KafkaSaslPlain | undefined {
  const username = flags.kafkaSaslUsername as string | undefined;
  const password = flags.kafkaSaslPassword as string | undefined;
  if (username === undefined && password === undefined) return undefined;
  if (username === undefined || password === undefined) {
    throw new Error('--kafka-sasl-username and --kafka-sasl-password go together');
  }
  return { username, password };
}

/** TLS when `--kafka-tls` says so, with the CA file's PEM read now: a bad path fails at start. */
function kafkaTlsOf(flags: Record<string, unknown>): KafkaTls | undefined {
  const caFile = flags.kafkaTlsCa as string | undefined;
  if (flags.kafkaTls !== true) {
    if (caFile !== undefined) throw new Error('--kafka-tls-ca needs --kafka-tls');
    return undefined;
  }
  if (caFile === undefined) return {};
  try {
    return { ca: fs.readFileSync(caFile, 'utf8') };
  } catch (error) {
    throw new Error(`--kafka-tls-ca ${caFile}: ${(error as Error).message}`);
  }
}

export function kafkaPortOf(flag: unknown): number | null {
  return flag === 'off' ? null : (flag as number);
}

/**
 * Whether a bind address is loopback, so a node there may go without keys or a cluster secret:
 * an IPv4 literal in 127.0.0.0/8, the IPv6 literal ::1 (bracketed or not), or `localhost`. Any
 * other name is not, whatever it looks like: `127.example.com` can resolve to a public address.
 */
export function isLoopback(host: string): boolean {
  if (host === 'localhost') return true;
  const literal = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const family = isIP(literal);
  if (family === 4) return literal.startsWith('127.');
  return family === 6 && literal === '::1';
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
