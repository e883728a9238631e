/** `tailbase serve-node`: flags (each with a TAILBASE_* environment variable) and signal handling. */
import { availableParallelism } from 'node:os';
import { Option, type Command } from 'commander';
import { parsePartitionList } from '../shared/partition-list.js';
import {
  applyThreadNiceOption,
  integerOption,
  isLoopback,
  kafkaLogOf,
  kafkaLogOptions,
  onShutdownSignal,
  parseLogUrls,
} from '../shared/cli-options.js';
import { createLogger } from '../shared/logger.js';
import { DEFAULT_HOST, DEFAULT_LIMITS, type ServeNodeLimits } from './config.js';
import { FTS_AUTOMERGE_SEGMENTS_MAX, FTS_AUTOMERGE_SEGMENTS_MIN } from './fts-table.js';
import { startServeNode, type ServeNodeOptions } from './index.js';

/** A serve-node split over threads (bin/serve-node-threads.ts): apply, HTTP, reads. */
export type ThreadedServeNodeStart = (
  options: ServeNodeOptions & { readThreads: number; applyThreadNice: number },
) => Promise<{ url: string; stop(): Promise<void> }>;

/**
 * What a process runs beside its serve-node (bin/serve-node-views.ts: the view processors), with
 * flags of its own: started once the serve-node serves, stopped before it.
 */
export interface ServeNodeCompanion {
  options(): Option[];
  start(
    flags: Record<string, unknown>,
    options: ServeNodeOptions,
  ): Promise<{ stop(): Promise<void> }>;
}

/** The top-k lists' threshold, a flag of `serve-node` and of `tailbase start`. */
export function searchTopkListedDfMinOption(): Option {
  return integerOption(
    '--search-topk-listed-df-min <rows>',
    'rows a term must be in for the search index to keep its top-k list',
    'TAILBASE_SEARCH_TOPK_LISTED_DF_MIN',
    DEFAULT_LIMITS.searchTopkListedDfMin,
    1,
  );
}

/** Segments of a tier of a top-k list merged into one, a flag of `serve-node` and of `tailbase start`. */
export function searchTopkMergeSegmentsOption(): Option {
  return integerOption(
    '--search-topk-merge-segments <n>',
    "segments of one tier of a term's top-k list merged into one in the background",
    'TAILBASE_SEARCH_TOPK_MERGE_SEGMENTS',
    DEFAULT_LIMITS.searchTopkMergeSegments,
    2,
  );
}

export function ftsAutomergeSegmentsOption(): Option {
  return integerOption(
    '--fts-automerge-segments <n>',
    `segments of one level of a search table that FTS5 starts merging (its 'automerge'; ${FTS_AUTOMERGE_SEGMENTS_MIN}..${FTS_AUTOMERGE_SEGMENTS_MAX})`,
    'TAILBASE_FTS_AUTOMERGE_SEGMENTS',
    DEFAULT_LIMITS.ftsAutomergeSegments,
    FTS_AUTOMERGE_SEGMENTS_MIN,
    FTS_AUTOMERGE_SEGMENTS_MAX,
  );
}

/** The bounds of the serve-node's caches, flags of `serve-node` and of `tailbase start`. */
export type MemoryLimits = Pick<
  ServeNodeLimits,
  'sqliteCacheBytesMax' | 'sqliteMmapBytesMax' | 'facetValuesHeldMax' | 'searchTopkKnownTermsMax'
>;

export function memoryLimitOptions(): Option[] {
  return [
    integerOption(
      '--sqlite-cache-bytes-max <bytes>',
      "SQLite's page cache of each connection to the search store (the apply thread's and each read thread's)",
      'TAILBASE_SQLITE_CACHE_BYTES_MAX',
      DEFAULT_LIMITS.sqliteCacheBytesMax,
      0,
    ),
    integerOption(
      '--sqlite-mmap-bytes-max <bytes>',
      'bytes of the search store each connection maps into memory (the OS page cache; 0: none)',
      'TAILBASE_SQLITE_MMAP_BYTES_MAX',
      DEFAULT_LIMITS.sqliteMmapBytesMax,
      0,
    ),
    integerOption(
      '--facet-values-held-max <n>',
      'entries of facet values held in memory between writes, per thread; fields with more are counted in SQL',
      'TAILBASE_FACET_VALUES_HELD_MAX',
      DEFAULT_LIMITS.facetValuesHeldMax,
      0,
    ),
    integerOption(
      '--search-topk-known-terms-max <terms>',
      "terms whose document frequency the apply thread keeps in memory between writes (the top-k lists'); past it they are read again",
      'TAILBASE_SEARCH_TOPK_KNOWN_TERMS_MAX',
      DEFAULT_LIMITS.searchTopkKnownTermsMax,
      0,
    ),
  ];
}

/** The bounds of one apply transaction, flags of `serve-node` and of `tailbase start`. */
export type ApplySliceLimits = Pick<
  ServeNodeLimits,
  | 'applySliceMsMax'
  | 'applySliceRecordsMax'
  | 'applySliceBytesMax'
  | 'applySliceRecordsMin'
  | 'applySliceBytesMin'
>;

export function applySliceOptions(): Option[] {
  return [
    integerOption(
      '--apply-slice-ms-max <ms>',
      'how long one apply transaction should hold the apply thread; reads are answered between transactions',
      'TAILBASE_APPLY_SLICE_MS_MAX',
      DEFAULT_LIMITS.applySliceMsMax,
      1,
    ),
    integerOption(
      '--apply-slice-records-max <n>',
      'offsets of one apply transaction at most, whatever the time allows',
      'TAILBASE_APPLY_SLICE_RECORDS_MAX',
      DEFAULT_LIMITS.applySliceRecordsMax,
      1,
    ),
    integerOption(
      '--apply-slice-bytes-max <bytes>',
      'about this many record bytes in one apply transaction at most, whatever the time allows',
      'TAILBASE_APPLY_SLICE_BYTES_MAX',
      DEFAULT_LIMITS.applySliceBytesMax,
      1,
    ),
    integerOption(
      '--apply-slice-records-min <n>',
      'an apply transaction takes this many offsets (or --apply-slice-bytes-min bytes, whichever comes first) even past the time bound',
      'TAILBASE_APPLY_SLICE_RECORDS_MIN',
      DEFAULT_LIMITS.applySliceRecordsMin,
      1,
    ),
    integerOption(
      '--apply-slice-bytes-min <bytes>',
      'an apply transaction takes about this many record bytes (or --apply-slice-records-min offsets) even past the time bound',
      'TAILBASE_APPLY_SLICE_BYTES_MIN',
      DEFAULT_LIMITS.applySliceBytesMin,
      1,
    ),
  ];
}

export function applySliceValues(flags: Record<string, unknown>): ApplySliceLimits {
  return {
    applySliceMsMax: flags.applySliceMsMax as number,
    applySliceRecordsMax: flags.applySliceRecordsMax as number,
    applySliceBytesMax: flags.applySliceBytesMax as number,
    applySliceRecordsMin: flags.applySliceRecordsMin as number,
    applySliceBytesMin: flags.applySliceBytesMin as number,
  };
}

export function memoryLimitValues(flags: Record<string, unknown>): MemoryLimits {
  return {
    sqliteCacheBytesMax: flags.sqliteCacheBytesMax as number,
    sqliteMmapBytesMax: flags.sqliteMmapBytesMax as number,
    facetValuesHeldMax: flags.facetValuesHeldMax as number,
    searchTopkKnownTermsMax: flags.searchTopkKnownTermsMax as number,
  };
}

/**
 * With `startThreaded` and `--read-threads` above 0 (one a core by default), the serve-node runs
 * split over threads; with `--read-threads 0`, on the one thread.
 */
export function registerServeNodeCommand(
  program: Command,
  startThreaded?: ThreadedServeNodeStart,
  beside?: ServeNodeCompanion,
): void {
  const command = program
    .command('serve-node')
    .description('run a serve-node: tail partitions into LMDB and SQLite FTS5 and serve reads')
    .addOption(
      new Option('--data <dir>', 'data directory').env('TAILBASE_DATA').makeOptionMandatory(),
    )
    .addOption(
      new Option('--host <host>', 'address to bind').env('TAILBASE_HOST').default(DEFAULT_HOST),
    )
    .addOption(integerOption('--port <port>', 'port to listen on', 'TAILBASE_PORT', 0))
    .addOption(
      new Option(
        '--log <urls>',
        "the log: kafka://host:port[,host:port...] (Kafka brokers or log-nodes' Kafka listeners)",
      )
        .env('TAILBASE_LOG')
        .makeOptionMandatory()
        .argParser(parseLogUrls),
    )
    .addOption(
      new Option('--partitions <list>', "hosted partitions, e.g. 0-3,6 (default: all the log's)")
        .env('TAILBASE_PARTITIONS')
        .argParser(parsePartitionList),
    )
    .addOption(
      new Option('--from-snapshot <dir>', 'seed an empty data directory from a snapshot').env(
        'TAILBASE_FROM_SNAPSHOT',
      ),
    )
    .addOption(
      new Option('--cluster-secret <secret>', 'secret internal calls carry and must carry').env(
        'TAILBASE_CLUSTER_SECRET',
      ),
    )
    .addOption(
      integerOption(
        '--wait-ms-max <ms>',
        'longest a read may wait for offsets',
        'TAILBASE_WAIT_MS_MAX',
        DEFAULT_LIMITS.waitMsMax,
      ),
    )
    .addOption(
      integerOption(
        '--waiters-max <n>',
        'reads that may wait at once',
        'TAILBASE_WAITERS_MAX',
        DEFAULT_LIMITS.waitersMax,
      ),
    )
    .addOption(
      integerOption(
        '--log-read-bytes-max <bytes>',
        'bytes per log read, a partition',
        'TAILBASE_LOG_READ_BYTES_MAX',
        DEFAULT_LIMITS.logReadBytesMax,
      ),
    )
    .addOption(
      integerOption(
        '--log-read-bytes-min <bytes>',
        "bytes a partition of a fetcher's first log read, doubling at each read up to --log-read-bytes-max",
        'TAILBASE_LOG_READ_BYTES_MIN',
        DEFAULT_LIMITS.logReadBytesMin,
        1,
      ),
    )
    .addOption(
      integerOption(
        '--apply-linger-ms <ms>',
        'caught up and with no read waiting, pause this long between log reads (0: none)',
        'TAILBASE_APPLY_LINGER_MS',
        DEFAULT_LIMITS.applyLingerMs,
      ),
    )
    .addOption(
      integerOption(
        '--apply-linger-idle-ms <ms>',
        'pause between log reads only once no read has waited for offsets this long',
        'TAILBASE_APPLY_LINGER_IDLE_MS',
        DEFAULT_LIMITS.applyLingerIdleMs,
      ),
    )
    .addOption(
      integerOption(
        '--topic-refresh-ms <ms>',
        'how often to list the log topics for new collections',
        'TAILBASE_TOPIC_REFRESH_MS',
        DEFAULT_LIMITS.topicRefreshMs,
      ),
    )
    .addOption(
      integerOption(
        '--ready-lag-max <offsets>',
        '/readyz is 200 when every partition lags by at most this',
        'TAILBASE_READY_LAG_MAX',
        DEFAULT_LIMITS.readyLagMax,
      ),
    )
    .addOption(
      integerOption(
        '--scan-bytes-max <bytes>',
        'document bytes of one scan page; past them the page ends early',
        'TAILBASE_SCAN_BYTES_MAX',
        DEFAULT_LIMITS.scanBytesMax,
      ),
    )
    .addOption(
      integerOption(
        '--get-batch-keys-max <n>',
        'keys of one batched document read',
        'TAILBASE_GET_BATCH_KEYS_MAX',
        DEFAULT_LIMITS.getBatchKeysMax,
      ),
    )
    .addOption(
      integerOption(
        '--get-batch-bytes-max <bytes>',
        'body bytes of one batched document read',
        'TAILBASE_GET_BATCH_BYTES_MAX',
        DEFAULT_LIMITS.getBatchBytesMax,
      ),
    )
    .addOption(
      integerOption(
        '--search-total-exact-max <n>',
        'matches a search counts for its total; past them the total is a lower bound',
        'TAILBASE_SEARCH_TOTAL_EXACT_MAX',
        DEFAULT_LIMITS.searchTotalExactMax,
      ),
    )
    .addOption(
      integerOption(
        '--reindex-step-docs-max <n>',
        'documents one step of a re-index after a settings change copies (one transaction)',
        'TAILBASE_REINDEX_STEP_DOCS_MAX',
        DEFAULT_LIMITS.reindexStepDocsMax,
        1,
      ),
    )
    .addOption(
      integerOption(
        '--reindex-step-ms-max <ms>',
        'a re-index step ends after the document that takes it past this long',
        'TAILBASE_REINDEX_STEP_MS_MAX',
        DEFAULT_LIMITS.reindexStepMsMax,
        0,
      ),
    )
    .addOption(
      integerOption(
        '--drop-step-docs-max <n>',
        "documents one step of a dropped collection's deletion removes (one transaction)",
        'TAILBASE_DROP_STEP_DOCS_MAX',
        DEFAULT_LIMITS.dropStepDocsMax,
        1,
      ),
    )
    .addOption(searchTopkListedDfMinOption())
    .addOption(searchTopkMergeSegmentsOption())
    .addOption(ftsAutomergeSegmentsOption())
    .addOption(
      integerOption(
        '--merge-quiet-ms <ms>',
        'no document written for this long before a table of the search index merges its segments',
        'TAILBASE_MERGE_QUIET_MS',
        DEFAULT_LIMITS.mergeQuietMs,
        0,
      ),
    )
    .addOption(
      integerOption(
        '--merge-written-percent <n>',
        'documents written since the last merge, as a percentage of the table, that make a merge due',
        'TAILBASE_MERGE_WRITTEN_PERCENT',
        DEFAULT_LIMITS.mergeWrittenPercent,
        0,
      ),
    )
    .addOption(
      integerOption(
        '--merge-step-ms-max <ms>',
        'a segment merge step (one transaction) ends past this long',
        'TAILBASE_MERGE_STEP_MS_MAX',
        DEFAULT_LIMITS.mergeStepMsMax,
        0,
      ),
    )
    .addOption(
      integerOption(
        '--read-threads <n>',
        'threads answering scans and searches beside the apply thread and the HTTP thread (which answers key reads); 0: one thread does everything',
        'TAILBASE_READ_THREADS',
        availableParallelism(),
        0,
      ),
    )
    .addOption(
      integerOption(
        '--store-flush-ms <ms>',
        'how often the stores are fsynced: a power loss takes back at most this long of writes',
        'TAILBASE_STORE_FLUSH_MS',
        DEFAULT_LIMITS.storeFlushMs,
        1,
      ),
    )
    .addOption(
      integerOption(
        '--store-bytes-duty-percent-max <n>',
        "share of a thread's time measuring the stores' bytes on disk may take: a measurement is reused until 100/n times its duration has passed",
        'TAILBASE_STORE_BYTES_DUTY_PERCENT_MAX',
        DEFAULT_LIMITS.storeBytesDutyPercentMax,
        1,
      ),
    );
  if (startThreaded !== undefined) command.addOption(applyThreadNiceOption());
  for (const option of applySliceOptions()) command.addOption(option);
  for (const option of memoryLimitOptions()) command.addOption(option);
  for (const option of kafkaLogOptions()) command.addOption(option);
  for (const option of beside?.options() ?? []) command.addOption(option);
  command.action(async (flags: Record<string, unknown>) => {
    const logger = createLogger('serve-node');
    if (!isLoopback(flags.host as string) && !flags.clusterSecret) {
      throw new Error('binding a non-loopback address needs --cluster-secret');
    }
    const readThreads = flags.readThreads as number;
    const options: ServeNodeOptions = {
      dataDir: flags.data as string,
      host: flags.host as string,
      port: flags.port as number,
      logUrls: flags.log as string[],
      partitions: flags.partitions as number[] | undefined,
      fromSnapshot: flags.fromSnapshot as string | undefined,
      clusterSecret: flags.clusterSecret as string | undefined,
      kafka: kafkaLogOf(flags),
      limits: {
        waitMsMax: flags.waitMsMax as number,
        waitersMax: flags.waitersMax as number,
        logReadBytesMax: flags.logReadBytesMax as number,
        logReadBytesMin: flags.logReadBytesMin as number,
        ...applySliceValues(flags),
        applyLingerMs: flags.applyLingerMs as number,
        applyLingerIdleMs: flags.applyLingerIdleMs as number,
        topicRefreshMs: flags.topicRefreshMs as number,
        readyLagMax: flags.readyLagMax as number,
        scanBytesMax: flags.scanBytesMax as number,
        getBatchKeysMax: flags.getBatchKeysMax as number,
        getBatchBytesMax: flags.getBatchBytesMax as number,
        searchTotalExactMax: flags.searchTotalExactMax as number,
        reindexStepDocsMax: flags.reindexStepDocsMax as number,
        reindexStepMsMax: flags.reindexStepMsMax as number,
        dropStepDocsMax: flags.dropStepDocsMax as number,
        searchTopkListedDfMin: flags.searchTopkListedDfMin as number,
        searchTopkMergeSegments: flags.searchTopkMergeSegments as number,
        ftsAutomergeSegments: flags.ftsAutomergeSegments as number,
        mergeQuietMs: flags.mergeQuietMs as number,
        mergeWrittenPercent: flags.mergeWrittenPercent as number,
        mergeStepMsMax: flags.mergeStepMsMax as number,
        storeFlushMs: flags.storeFlushMs as number,
        storeBytesDutyPercentMax: flags.storeBytesDutyPercentMax as number,
        ...memoryLimitValues(flags),
      },
      logger,
    };
    const running =
      startThreaded !== undefined && readThreads > 0
        ? await startThreaded({
            ...options,
            readThreads,
            applyThreadNice: flags.applyThreadNice as number,
          })
        : await startServeNode(options);
    const companion = await beside?.start(flags, options).catch(async (error: unknown) => {
      await running.stop();
      throw error;
    });
    process.stdout.write(`serve-node listening on ${running.url}\n`);
    onShutdownSignal(logger, async () => {
      await companion?.stop();
      await running.stop();
    });
  });
}
