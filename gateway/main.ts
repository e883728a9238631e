/** `tailbase gateway`: flags (each with a TAILBASE_* environment variable) and signal handling. */
import { type Command, Option } from 'commander';
import { integerOption, onShutdownSignal } from '../shared/cli-options.js';
import { APPEND_REQUEST_BYTES_MAX } from '../shared/log-client.js';
import { createLogger } from '../shared/logger.js';
import { GET_BATCH_KEYS_MAX } from '../shared/serve-client.js';
import { DEFAULT_LIMITS, DEFAULT_WRITER, parseApiKeys } from './config.js';
import { startGateway } from './index.js';

const urlList = (raw: string) =>
  raw
    .split(',')
    .map((url) => url.trim())
    .filter((url) => url.length > 0);

export function registerGatewayCommand(program: Command): void {
  program
    .command('gateway')
    .description('run the gateway: the public HTTP API over the log and the serve-nodes')
    .addOption(
      new Option('--log <urls>', 'log-node URLs, comma-separated')
        .env('TAILBASE_LOG')
        .argParser(urlList)
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
        '--document-bytes-max <bytes>',
        'largest document',
        'TAILBASE_DOCUMENT_BYTES_MAX',
        DEFAULT_LIMITS.documentBytesMax,
      ),
    )
    .addOption(
      integerOption(
        '--bulk-records-max <n>',
        'most records in one bulk request',
        'TAILBASE_BULK_RECORDS_MAX',
        DEFAULT_LIMITS.bulkRecordsMax,
      ),
    )
    .addOption(
      integerOption(
        '--bulk-bytes-max <bytes>',
        'largest bulk body',
        'TAILBASE_BULK_BYTES_MAX',
        DEFAULT_LIMITS.bulkBytesMax,
      ),
    )
    .addOption(
      integerOption(
        '--wait-ms-max <ms>',
        'longest wait a read may ask for',
        'TAILBASE_WAIT_MS_MAX',
        DEFAULT_LIMITS.waitMsMax,
      ),
    )
    .addOption(
      integerOption(
        '--linger-ms <ms>',
        'how long a write waits for others to share its batch',
        'TAILBASE_LINGER_MS',
        DEFAULT_WRITER.lingerMs,
      ),
    )
    .addOption(
      integerOption(
        '--batch-records-max <n>',
        'most records in one appended batch',
        'TAILBASE_BATCH_RECORDS_MAX',
        DEFAULT_WRITER.batchRecordsMax,
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
        "body of one multi-partition append (at most the log-nodes' --append-request-bytes-max)",
        'TAILBASE_APPEND_REQUEST_BYTES_MAX',
        APPEND_REQUEST_BYTES_MAX,
      ),
    )
    .action(async (flags: Record<string, unknown>) => {
      const logger = createLogger('gateway');
      const running = await startGateway(
        {
          host: flags.host as string,
          port: flags.port as number,
          logUrls: flags.log as string[],
          serveUrls: flags.serve as string[],
          clusterSecret: flags.clusterSecret as string | undefined,
          apiKeys: flags.apiKeys ? parseApiKeys(flags.apiKeys as string) : [],
          serveGetBatchKeysMax: flags.serveGetBatchKeysMax as number,
          appendRequestBytesMax: flags.appendRequestBytesMax as number,
          limits: {
            documentBytesMax: flags.documentBytesMax as number,
            bulkRecordsMax: flags.bulkRecordsMax as number,
            bulkBytesMax: flags.bulkBytesMax as number,
            waitMsMax: flags.waitMsMax as number,
          },
          writer: {
            lingerMs: flags.lingerMs as number,
            batchRecordsMax: flags.batchRecordsMax as number,
          },
        },
        { logger },
      );
      process.stdout.write(`gateway listening on ${running.url}\n`);
      onShutdownSignal(logger, running.stop);
    });
}
