/** `tailbase log-node`: flags (each with a TAILBASE_* environment variable) and signal handling. */
import { type Command, InvalidArgumentError, Option } from 'commander';
import { createLogger } from '../shared/logger.js';
import { logNodeDefaults } from './config.js';
import { startLogNode } from './index.js';
import { parseApiKeys } from '../shared/api-keys.js';
import {
  integerOption,
  isLoopback,
  kafkaAdvertisedOptions,
  kafkaPortOf,
  kafkaPortOption,
  limitOptions,
  limitValues,
  onShutdownSignal,
} from '../shared/cli-options.js';
import { parsePartitionList } from '../shared/partition-list.js';

/** The limits README.md promises as flags, beyond the ones with their own wording below. */
const LIMIT_HELP = {
  indexIntervalBytes: 'an index entry every this many bytes',
  batchBytesMax: 'largest batch accepted, bytes',
  recordBytesMax: 'largest record accepted, bytes',
  recordsPerBatchMax: 'most records in one batch',
  batchInflatedBytesMax: 'most bytes a compressed batch may inflate to',
  partitionsMax: 'most partitions a node holds',
  readBytesMax: 'most bytes one read answers with',
  longPollsMax: 'most reads waiting for data at once',
  longPollWaitMsMax: 'longest wait_ms of a read',
  appendQueueBytesMax: 'bytes waiting to be written',
  tailCacheBytesMax: 'newest bytes of each partition kept in memory for tailers (0: none)',
  readBuffersIdleBytesMax: 'bytes of file-read buffers kept for reuse, all partitions (0: none)',
  cleanerKeysMax: 'keys the cleaner tracks in one pass',
  cleanerSliceMsMax: "longest the cleaner holds the log-node's thread at once, ms",
  producerExpiryMs: 'forget producers silent this long',
  producerRecentBatchesMax: 'retries remembered',
};

function parseRatio(raw: string): number {
  const value = Number(raw);
  if (raw.trim() === '' || !(value >= 0 && value <= 1)) {
    throw new InvalidArgumentError('expected a number from 0 to 1');
  }
  return value;
}

export function registerLogNodeCommand(program: Command): void {
  const command = program
    .command('log-node')
    .description('run a log-node: durable partitions that hand out offsets')
    .addOption(
      new Option('--data <dir>', 'data directory').env('TAILBASE_DATA').makeOptionMandatory(),
    )
    .addOption(
      new Option('--host <host>', 'address to bind')
        .env('TAILBASE_HOST')
        .default(logNodeDefaults.host),
    )
    .addOption(
      integerOption('--port <port>', 'port to listen on', 'TAILBASE_PORT', logNodeDefaults.port),
    )
    .addOption(
      integerOption(
        '--partitions <n>',
        'partitions, when creating the cluster',
        'TAILBASE_PARTITIONS',
      ),
    )
    .addOption(
      new Option(
        '--host-partitions <list>',
        'partitions stored here when log-nodes split them, e.g. 0-3,6',
      )
        .env('TAILBASE_HOST_PARTITIONS')
        .argParser(parsePartitionList),
    )
    .addOption(
      new Option('--cluster-id <id>', 'the cluster id every log-node of a cluster shares').env(
        'TAILBASE_CLUSTER_ID',
      ),
    )
    .addOption(new Option('--node-id <id>', 'this node id').env('TAILBASE_NODE_ID'))
    .addOption(
      new Option('--cluster-secret <secret>', 'secret internal calls must carry').env(
        'TAILBASE_CLUSTER_SECRET',
      ),
    )
    .addOption(
      new Option(
        '--fsync <policy>',
        'always: ack after fsync; interval: may lose the last interval on power loss',
      )
        .choices(['always', 'interval'])
        .env('TAILBASE_FSYNC')
        .default(logNodeDefaults.fsync),
    )
    .addOption(
      integerOption(
        '--fsync-interval-ms <ms>',
        'fsync period with --fsync interval',
        'TAILBASE_FSYNC_INTERVAL_MS',
        logNodeDefaults.fsyncIntervalMs,
      ),
    )
    .addOption(
      integerOption(
        '--segment-bytes-max <bytes>',
        'roll a segment at this size',
        'TAILBASE_SEGMENT_BYTES_MAX',
        logNodeDefaults.segmentBytesMax,
      ),
    )
    .addOption(
      integerOption(
        '--segment-ms-max <ms>',
        'roll a segment at this age',
        'TAILBASE_SEGMENT_MS_MAX',
        logNodeDefaults.segmentMsMax,
      ),
    )
    .addOption(
      new Option(
        '--cleanup-policy <policy>',
        "a new collection topic's: compact (keyed data) or delete (events)",
      )
        .choices(['compact', 'delete'])
        .env('TAILBASE_CLEANUP_POLICY')
        .default(logNodeDefaults.cleanupPolicy),
    )
    .addOption(
      integerOption(
        '--retention-ms <ms>',
        'delete closed segments older than this (-1: never)',
        'TAILBASE_RETENTION_MS',
        logNodeDefaults.retentionMs,
      ),
    )
    .addOption(
      integerOption(
        '--retention-bytes <bytes>',
        'delete oldest segments past this size (-1: never)',
        'TAILBASE_RETENTION_BYTES',
        logNodeDefaults.retentionBytes,
      ),
    )
    .addOption(
      integerOption(
        '--delete-retention-ms <ms>',
        'keep tombstones this long',
        'TAILBASE_DELETE_RETENTION_MS',
        logNodeDefaults.deleteRetentionMs,
      ),
    )
    .addOption(
      integerOption(
        '--recovery-point-interval-ms <ms>',
        "store each partition's recovery point at most this often",
        'TAILBASE_RECOVERY_POINT_INTERVAL_MS',
        logNodeDefaults.recoveryPointIntervalMs,
      ),
    )
    .addOption(
      integerOption(
        '--cleaner-interval-ms <ms>',
        'how often the cleaner runs',
        'TAILBASE_CLEANER_INTERVAL_MS',
        logNodeDefaults.cleanerIntervalMs,
      ),
    )
    .addOption(
      new Option(
        '--cleaner-min-dirty-ratio <ratio>',
        'clean a compacted partition once its closed bytes past its cleaned-through point are this share of its closed bytes (0..1)',
      )
        .env('TAILBASE_CLEANER_MIN_DIRTY_RATIO')
        .argParser(parseRatio)
        .default(logNodeDefaults.cleanerMinDirtyRatio),
    );
  command.addOption(kafkaPortOption());
  for (const option of kafkaAdvertisedOptions()) command.addOption(option);
  command.addOption(
    new Option(
      '--kafka-peers <host:port,...>',
      "the other log-nodes' Kafka listeners, when this one hosts some of the partitions: Kafka clients then reach every partition through any of them",
    ).env('TAILBASE_KAFKA_PEERS'),
  );
  command.addOption(
    new Option(
      '--api-keys <keys>',
      'API keys as KEY:read,write;KEY2:admin: the Kafka listener takes them as SASL/PLAIN passwords',
    ).env('TAILBASE_API_KEYS'),
  );
  for (const option of limitOptions(LIMIT_HELP, logNodeDefaults)) command.addOption(option);
  command.action(async (flags: Record<string, unknown>) => {
    const logger = createLogger('log-node');
    if (!isLoopback(flags.host as string) && !flags.clusterSecret) {
      throw new Error('binding a non-loopback address needs --cluster-secret');
    }
    const apiKeys = flags.apiKeys ? parseApiKeys(flags.apiKeys as string) : [];
    const kafkaPort = kafkaPortOf(flags.kafkaPort);
    if (kafkaPort !== null && !isLoopback(flags.host as string) && apiKeys.length === 0) {
      throw new Error(
        'a Kafka listener off loopback needs --api-keys (SASL/PLAIN), or --kafka-port off',
      );
    }
    const running = await startLogNode({
      dataDir: flags.data as string,
      host: flags.host as string,
      port: flags.port as number,
      partitions: flags.partitions as number | undefined,
      nodeId: flags.nodeId as string | undefined,
      clusterId: flags.clusterId as string | undefined,
      hostedPartitions: flags.hostPartitions as number[] | undefined,
      clusterSecret: flags.clusterSecret as string | undefined,
      fsync: flags.fsync as 'always' | 'interval',
      fsyncIntervalMs: flags.fsyncIntervalMs as number,
      segmentBytesMax: flags.segmentBytesMax as number,
      segmentMsMax: flags.segmentMsMax as number,
      cleanupPolicy: flags.cleanupPolicy as 'compact' | 'delete',
      retentionMs: flags.retentionMs as number,
      retentionBytes: flags.retentionBytes as number,
      deleteRetentionMs: flags.deleteRetentionMs as number,
      cleanerIntervalMs: flags.cleanerIntervalMs as number,
      recoveryPointIntervalMs: flags.recoveryPointIntervalMs as number,
      cleanerMinDirtyRatio: flags.cleanerMinDirtyRatio as number,
      ...limitValues(LIMIT_HELP, flags),
      kafka:
        kafkaPort === null
          ? null
          : {
              host: flags.host as string,
              port: kafkaPort,
              apiKeys,
              advertisedHost: flags.kafkaAdvertisedHost as string | undefined,
              advertisedPort: flags.kafkaAdvertisedPort as number | undefined,
              peers: flags.kafkaPeers
                ? (flags.kafkaPeers as string).split(',').filter((peer) => peer !== '')
                : undefined,
            },
      logger,
    });
    process.stdout.write(`log-node listening on ${running.url}\n`);
    if (running.kafkaPort !== null) {
      process.stdout.write(`Kafka listener on ${flags.host as string}:${running.kafkaPort}\n`);
    }
    onShutdownSignal(logger, running.stop);
  });
}
