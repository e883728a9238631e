/** `tailbase gateway`: flags (each with a TAILBASE_* environment variable) and signal handling. */
import { type Command, Option } from 'commander';
import {
  integerOption,
  kafkaLogOf,
  kafkaLogOptions,
  limitOptions,
  limitValues,
  onShutdownSignal,
  parseLogUrls,
} from '../shared/cli-options.js';
import { CODECS_SUPPORTED, type SupportedCodecName } from '../shared/batch-compression.js';
import { kafkaLogDefaults } from '../shared/kafka-log/index.js';
import { createLogger } from '../shared/logger.js';
import { GET_BATCH_KEYS_MAX } from '../shared/serve-api.js';
import {
  DEFAULT_LIMITS,
  DEFAULT_WRITER,
  LIMIT_HELP,
  parseApiKeys,
  SERVE_ANSWER_MS_MAX,
  WRITER_HELP,
} from './config.js';
import { startGateway } from './index.js';

const urlList = (raw: string) =>
  raw
    .split(',')
    .map((url) => url.trim())
    .filter((url) => url.length > 0);

/** The gateway's limit and writer flags, for `tailbase gateway` and `tailbase start`. */
export function addGatewayLimitOptions(command: Command): Command {
  const options = [
    ...limitOptions(LIMIT_HELP, DEFAULT_LIMITS),
    ...limitOptions(WRITER_HELP, DEFAULT_WRITER),
    new Option(
      '--log-compression <codec>',
      'codec of the batches the gateway appends to the log (docs/formats.md weighs the cost)',
    )
      .env('TAILBASE_LOG_COMPRESSION')
      .choices(CODECS_SUPPORTED)
      .default('none'),
  ];
  for (const option of options) command.addOption(option);
  return command;
}

/** What the flags of addGatewayLimitOptions were given. */
export function gatewayLimitValues(flags: Record<string, unknown>) {
  return {
    limits: limitValues(LIMIT_HELP, flags),
    writer: limitValues(WRITER_HELP, flags),
    logCompression: flags.logCompression as SupportedCodecName,
  };
}

export function registerGatewayCommand(program: Command): void {
  const command = program
    .command('gateway')
    .description('run the gateway: the public HTTP API over the log and the serve-nodes')
    .addOption(
      new Option(
        '--log <urls>',
        "the log: kafka://host:port[,host:port...] (Kafka brokers or log-nodes' Kafka listeners)",
      )
        .env('TAILBASE_LOG')
        .argParser(parseLogUrls)
        .makeOptionMandatory(),
    )
    .addOption(
      new Option('--serve <urls>', 'serve-node URLs, comma-separated')
        .env('TAILBASE_SERVE')
        .argParser(urlList)
        .makeOptionMandatory(),
    )
    .addOption(
      new Option('--host <host>', 'address to bind').env('TAILBASE_HOST').default('127.0.0.1'),
    )
    .addOption(integerOption('--port <port>', 'port to listen on', 'TAILBASE_PORT', 8080))
    .addOption(
      new Option('--api-keys <keys>', 'API keys as KEY:read,write;KEY2:admin').env(
        'TAILBASE_API_KEYS',
      ),
    )
    .addOption(
      new Option('--cluster-secret <secret>', 'secret carried on internal calls').env(
        'TAILBASE_CLUSTER_SECRET',
      ),
    )
    .addOption(
      integerOption(
        '--serve-answer-ms-max <ms>',
        'how long a serve-node may take beyond the wait a read asked for before it counts as down',
        'TAILBASE_SERVE_ANSWER_MS_MAX',
        SERVE_ANSWER_MS_MAX,
      ),
    )
    .addOption(
      integerOption(
        '--serve-get-batch-keys-max <n>',
        'keys in one batched read to a serve-node (at most its --get-batch-keys-max)',
        'TAILBASE_SERVE_GET_BATCH_KEYS_MAX',
        GET_BATCH_KEYS_MAX,
      ),
    )
    .addOption(
      integerOption(
        '--append-request-bytes-max <bytes>',
        'bytes of one Produce request to the log (the appends of several partitions sent together)',
        'TAILBASE_APPEND_REQUEST_BYTES_MAX',
        kafkaLogDefaults.produceRequestBytesMax,
      ),
    );
  for (const option of kafkaLogOptions()) command.addOption(option);
  addGatewayLimitOptions(command).action(async (flags: Record<string, unknown>) => {
    const logger = createLogger('gateway');
    const running = await startGateway(
      {
        host: flags.host as string,
        port: flags.port as number,
        logUrls: flags.log as string[],
        serveUrls: flags.serve as string[],
        clusterSecret: flags.clusterSecret as string | undefined,
        kafka: kafkaLogOf(flags),
        apiKeys: flags.apiKeys ? parseApiKeys(flags.apiKeys as string) : [],
        serveGetBatchKeysMax: flags.serveGetBatchKeysMax as number,
        serveAnswerMsMax: flags.serveAnswerMsMax as number,
        appendRequestBytesMax: flags.appendRequestBytesMax as number,
        ...gatewayLimitValues(flags),
      },
      { logger },
    );
    process.stdout.write(`gateway listening on ${running.url}\n`);
    onShutdownSignal(logger, running.stop);
  });
}
