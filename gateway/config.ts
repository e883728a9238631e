/**
 * The gateway's configuration: where the log and the serve-nodes are, who may call, and every
 * limit it enforces, each named with its unit last.
 */
import { BATCH_HEADER_BYTES, KEY_BYTES_MAX } from '../shared/batch-codec.js';
import type { SupportedCodecName } from '../shared/batch-compression.js';
import { CLOSE_ANSWER_WAIT_MS_MAX } from '../shared/http-server.js';
import { INTERNAL_SOCKETS_MAX } from '../shared/internal-http.js';
import { kafkaLogDefaults } from '../shared/kafka-log/index.js';
import type { LogLimits } from '../shared/log-api.js';
import {
  FIELD_PARAM_LIMIT_HELP,
  FIELD_PARAM_LIMITS_DEFAULT,
  type FieldParamLimits,
} from '../shared/filter-params.js';
import { GET_BATCH_KEYS_MAX, type ServeReadLimits } from '../shared/serve-api.js';

import type { KafkaConnectOptions } from '../shared/log-connect.js';
import type { ApiKey } from '../shared/api-keys.js';

export { parseApiKeys, type ApiKey, type Scope } from '../shared/api-keys.js';

/**
 * The most bytes a record of RecordBatch v2 spends beyond its key and value (no headers): its
 * length, offset delta, key length, value length and header count as varints (5 bytes at most
 * each), its timestamp delta as a varlong (10) and its attributes (1).
 */
export const RECORD_OVERHEAD_BYTES_MAX = 5 + 5 + 5 + 5 + 5 + 10 + 1;

export interface GatewayLimits extends FieldParamLimits {
  /** A document's JSON bytes (PUT body, or one bulk record's value). */
  documentBytesMax: number;
  /** Levels of nesting in a document, the document object itself being level 1. */
  documentDepthMax: number;
  /** A key's UTF-8 bytes; the batch format caps it at 1024. */
  keyBytesMax: number;
  bulkRecordsMax: number;
  bulkBytesMax: number;
  /**
   * The longest the HTTP thread parses an NDJSON bulk body, or checks a bulk's records, before
   * other requests get a turn, ms. A JSON array body is one `JSON.parse`, not sliced.
   */
  bulkParseSliceMsMax: number;
  settingsBytesMax: number;
  /** A view definition's JSON bytes (PUT /v1/views/:v). */
  viewBytesMax: number;
  scanLimitDefault: number;
  scanLimitMax: number;
  searchLimitDefault: number;
  searchLimitMax: number;
  /** Deep pages cost every serve-node offset+limit hits, so they are bounded (with searchLimitMax,
   * within the serve-nodes' searchDepthMax of 1000). */
  searchOffsetMax: number;
  queryCharsMax: number;
  /** Values of one facet field a search answers (the most frequent); the rest are counted as omitted. */
  facetValuesMax: number;
  waitMsDefault: number;
  waitMsMax: number;
  /**
   * How long past a read's wait_ms the gateway gives a serve-node's own 504 before it answers
   * one itself (wait-deadline.ts): the answer's trip, and the gateway's own event loop.
   */
  waitSlackMs: number;
  /**
   * Incarnations of a collection the log does not hold that a read's token is checked against
   * (a dropped collection's token is refused rather than waited for): each costs one CRC-32C.
   */
  incarnationsCheckedMax: number;
  /** Events a change-feed request may ask for with `limit=` before the stream ends. */
  feedLimitMax: number;
  /**
   * Change feeds open at once. Each holds one long-poll per log-node on the sockets the gateway
   * keeps to it, so at most FEEDS_MAX_CEILING: appends and reads always keep the other half.
   */
  feedsMax: number;
  /**
   * Views' partitions whose epoch count the change feeds keep gateway-wide (feed-epochs.ts), so a
   * feed counts from the last one's mark rather than from the log start; the least used go first.
   */
  feedEpochPartitionsMax: number;
  /**
   * Reads of views' partitions below a change feed's start that one feed has in flight at once
   * (feed-fences.ts), each of up to `feedReadBytesMax`: a feed's first answer over many
   * partitions begins all their counts together.
   */
  feedEpochReadsMax: number;
}

export const FEEDS_MAX_CEILING = INTERNAL_SOCKETS_MAX / 2;

export interface WriterConfig {
  /** How long a partition's first pending write waits for company before its batch is sent. */
  lingerMs: number;
  batchRecordsMax: number;
  batchBytesMax: number;
  /** Writes queued per partition (sent and waiting) before new ones are turned away (503). */
  pendingBytesMax: number;
  /** One append attempt's bound; a timed-out attempt is retried with the same id and sequence. */
  appendTimeoutMs: number;
  appendAttemptsMax: number;
  appendRetryBackoffMs: number;
}

export interface GatewayConfig {
  host: string;
  port: number;
  /** The log-nodes; when they split the partitions, each partition goes to the one hosting it. */
  logUrls: string[];
  serveUrls: string[];
  clusterSecret?: string;
  /** How a log reached by kafka:// is reached and its topics named. */
  kafka?: KafkaConnectOptions;
  apiKeys: ApiKey[];
  limits: GatewayLimits;
  writer: WriterConfig;
  /**
   * The codec of the batches this gateway appends (none or gzip): bytes of the log against the
   * CPU of deflating here (on libuv's thread pool) and of inflating in every reader of the log.
   */
  logCompression: SupportedCodecName;
  /** How often each serve-node's /internal/status is read to learn what it hosts and its lag. */
  topologyRefreshMs: number;
  /** A serve-node that failed a call is skipped for this long unless no replica is left. */
  nodeDownMs: number;
  /** Hits a serve-node answers per search call (its searchLimitMax); deeper pages are fetched. */
  serveSearchPageMax: number;
  /** Keys in one batched read to a serve-node (at most its getBatchKeysMax). */
  serveGetBatchKeysMax: number;
  /**
   * How long a serve-node may take to answer, beyond the wait a read asked it for; past it the node
   * counts as down (for nodeDownMs) and the read moves to another replica.
   */
  serveAnswerMsMax: number;
  /** Bytes of one Produce request to the log: the appends of several partitions sent together. */
  appendRequestBytesMax: number;
  feedReadBytesMax: number;
  feedPollMs: number;
  /**
   * The longest a change feed waits before reading again a partition the log could not serve (no
   * leader, a broker down): its waits double from 100 ms to this; meanwhile the others go on.
   */
  feedRetryMsMax: number;
  /** How often a change feed re-reads the log's topics, so a new collection joins it. */
  feedTopicsRefreshMs: number;
  /** How long start waits for the log to answer (its cluster id and partitions). */
  startWaitMsMax: number;
  /** How long a stopping gateway waits for the answers to requests already in. */
  closeAnswerWaitMsMax: number;
}

export const SERVE_ANSWER_MS_MAX = 5000;

export const DEFAULT_LIMITS: GatewayLimits = {
  documentBytesMax: 1024 * 1024,
  documentDepthMax: 64,
  keyBytesMax: 1024,
  bulkRecordsMax: 10_000,
  bulkBytesMax: 16 * 1024 * 1024,
  bulkParseSliceMsMax: 5,
  settingsBytesMax: 64 * 1024,
  viewBytesMax: 64 * 1024,
  scanLimitDefault: 100,
  scanLimitMax: 1000,
  searchLimitDefault: 10,
  searchLimitMax: 100,
  searchOffsetMax: 900,
  queryCharsMax: 1024,
  facetValuesMax: 100,
  ...FIELD_PARAM_LIMITS_DEFAULT,
  waitMsDefault: 5000,
  waitMsMax: 30_000,
  waitSlackMs: 100,
  incarnationsCheckedMax: 64,
  feedLimitMax: 100_000,
  feedsMax: 64,
  feedEpochPartitionsMax: 4096,
  feedEpochReadsMax: 4,
};

/** What each limit bounds: the help of its flag (shared/cli-options.ts limitOptions). */
export const LIMIT_HELP: Record<keyof GatewayLimits, string> = {
  documentBytesMax: 'largest document (a PUT body or a bulk value), bytes',
  documentDepthMax: 'deepest nesting of a document, the document itself being level 1',
  keyBytesMax: 'longest key, UTF-8 bytes (at most 1024)',
  bulkRecordsMax: 'most records in one bulk request',
  bulkBytesMax: 'largest bulk body, bytes',
  bulkParseSliceMsMax:
    'longest the HTTP thread parses an NDJSON bulk body before other requests get a turn (a JSON array body is one parse, only its checks are sliced), ms',
  settingsBytesMax: 'largest collection settings body, bytes',
  viewBytesMax: 'largest view definition body, bytes',
  scanLimitDefault: 'scan page size without limit=',
  scanLimitMax: 'largest scan limit=',
  searchLimitDefault: 'search hits without limit=',
  searchLimitMax: 'largest search limit=',
  searchOffsetMax: 'largest search offset=',
  queryCharsMax: 'longest search q=, characters',
  facetValuesMax:
    'most values of one facet field a search answers; the rest are counted in omitted',
  ...FIELD_PARAM_LIMIT_HELP,
  waitMsDefault: 'wait_ms of a read that waits for a token without one, ms',
  waitMsMax: 'longest wait_ms a read may ask for, ms',
  waitSlackMs:
    "how long past a read's wait_ms the gateway answers 504 itself if no serve-node has, ms",
  incarnationsCheckedMax:
    'dropped incarnations of a missing collection a read token is checked against',
  feedLimitMax: 'most events one change-feed request may ask for',
  feedsMax: `change feeds open at once (at most ${FEEDS_MAX_CEILING})`,
  feedEpochPartitionsMax:
    "views' partitions whose epoch count the change feeds keep, so a feed counts from the last one's",
  feedEpochReadsMax:
    "reads of views' partitions below a change feed's start one feed has in flight at once, each of up to 1 MiB (feedReadBytesMax)",
};

export const WRITER_HELP: Record<keyof WriterConfig, string> = {
  lingerMs:
    "how long a partition's first pending write waits for others to share its batch, ms (0: the writes of the same event-loop turn)",
  batchRecordsMax: 'most records in one appended batch',
  batchBytesMax: 'largest appended batch, bytes',
  pendingBytesMax: 'bytes of writes queued per partition before new ones get 503',
  appendTimeoutMs: 'bound of one append attempt, ms',
  appendAttemptsMax: 'attempts of one append before its outcome is unknown',
  appendRetryBackoffMs: 'pause before a retried append, times the attempt number, ms',
};

export const DEFAULT_WRITER: WriterConfig = {
  // 0: the writes parsed in one turn share a batch, and a write to an idle partition waits no
  // timer. With tailbase start, 1 ms made a lone PUT take 2.6 ms at the median against 1.4 ms,
  // and 64 connections wrote no faster (7,900-8,300 against 7,700-8,800 PUT/s).
  lingerMs: 0,
  batchRecordsMax: 1000,
  batchBytesMax: 4 * 1024 * 1024,
  pendingBytesMax: 64 * 1024 * 1024,
  appendTimeoutMs: 10_000,
  appendAttemptsMax: 3,
  appendRetryBackoffMs: 50,
};

export type GatewayConfigInput = Partial<Omit<GatewayConfig, 'limits' | 'writer'>> & {
  logUrls: string[];
  serveUrls: string[];
  limits?: Partial<GatewayLimits>;
  writer?: Partial<WriterConfig>;
};

/** Writer settings that may be 0 (no linger, no pause); every other setting is at least 1. */
const MAY_BE_ZERO = new Set<string>(['lingerMs', 'appendRetryBackoffMs']);

function checkSettings(settings: Record<string, number>): void {
  for (const [name, value] of Object.entries(settings)) {
    const min = MAY_BE_ZERO.has(name) ? 0 : 1;
    if (!Number.isSafeInteger(value) || value < min) {
      throw new Error(`${name} must be an integer of at least ${min}, not ${value}`);
    }
  }
}

export function resolveGatewayConfig(input: GatewayConfigInput): GatewayConfig {
  const config: GatewayConfig = {
    host: '127.0.0.1',
    port: 0,
    apiKeys: [],
    topologyRefreshMs: 1000,
    nodeDownMs: 2000,
    serveSearchPageMax: 100,
    serveGetBatchKeysMax: GET_BATCH_KEYS_MAX,
    serveAnswerMsMax: SERVE_ANSWER_MS_MAX,
    appendRequestBytesMax: kafkaLogDefaults.produceRequestBytesMax,
    feedReadBytesMax: 1024 * 1024,
    feedPollMs: 5000,
    feedRetryMsMax: 5000,
    feedTopicsRefreshMs: 1000,
    startWaitMsMax: 30_000,
    closeAnswerWaitMsMax: CLOSE_ANSWER_WAIT_MS_MAX,
    logCompression: 'none',
    ...input,
    limits: { ...DEFAULT_LIMITS, ...input.limits },
    writer: { ...DEFAULT_WRITER, ...input.writer },
  };
  checkSettings({ ...config.limits });
  checkSettings({ ...config.writer });
  const { limits } = config;
  for (const [fallback, max] of [
    ['scanLimitDefault', 'scanLimitMax'],
    ['searchLimitDefault', 'searchLimitMax'],
    ['waitMsDefault', 'waitMsMax'],
  ] as const) {
    if (limits[fallback] > limits[max]) {
      throw new Error(`${fallback} ${limits[fallback]} is above ${max} ${limits[max]}`);
    }
  }
  if (limits.feedsMax > FEEDS_MAX_CEILING) {
    throw new Error(
      `feedsMax must be at most ${FEEDS_MAX_CEILING}, half the sockets kept per log-node`,
    );
  }
  if (limits.keyBytesMax > KEY_BYTES_MAX) {
    throw new Error(`keyBytesMax must be at most ${KEY_BYTES_MAX}, the batch format's bound`);
  }
  return config;
}

/**
 * The gateway's batches must be ones the log takes: a refused batch fails every write in it, and a
 * bulk request can be refused after other partitions took theirs. Checked at start against the
 * log-nodes' limits (the tightest of them).
 */
export function checkAgainstLog(config: GatewayConfig, log: LogLimits): void {
  const recordBytesMax =
    RECORD_OVERHEAD_BYTES_MAX + config.limits.keyBytesMax + config.limits.documentBytesMax;
  const problems = [
    config.writer.batchRecordsMax > log.recordsPerBatchMax &&
      `batchRecordsMax ${config.writer.batchRecordsMax} exceeds the log's recordsPerBatchMax ${log.recordsPerBatchMax}`,
    config.writer.batchBytesMax + BATCH_HEADER_BYTES > log.batchBytesMax &&
      `batchBytesMax ${config.writer.batchBytesMax} plus a batch header exceeds the log's batchBytesMax ${log.batchBytesMax}`,
    recordBytesMax > log.recordBytesMax &&
      `documentBytesMax ${config.limits.documentBytesMax} with the longest key makes records of ${recordBytesMax} bytes, past the log's recordBytesMax ${log.recordBytesMax}`,
    recordBytesMax + BATCH_HEADER_BYTES > log.batchBytesMax &&
      `documentBytesMax ${config.limits.documentBytesMax} makes a one-record batch past the log's batchBytesMax ${log.batchBytesMax}`,
  ].filter(isStated);
  if (problems.length > 0)
    throw new Error(`the gateway's limits do not fit the log: ${problems.join('; ')}`);
}

/**
 * Where the gateway's read limits pass a serve-node's: requests the gateway accepts that the node
 * would refuse (or, for waits, cut short). Serve-nodes come and go, so this is reported (logged,
 * and in /v1/status), not a reason to stop.
 */
export function serveLimitConflicts(config: GatewayConfig, node: ServeReadLimits): string[] {
  const { limits } = config;
  const deepest = limits.searchOffsetMax + limits.searchLimitMax;
  return [
    limits.scanLimitMax > node.scanLimitMax &&
      `scanLimitMax ${limits.scanLimitMax} exceeds the serve-node's scanLimitMax ${node.scanLimitMax}`,
    config.serveSearchPageMax > node.searchLimitMax &&
      `serveSearchPageMax ${config.serveSearchPageMax} exceeds the serve-node's searchLimitMax ${node.searchLimitMax}`,
    deepest > node.searchDepthMax &&
      `searchOffsetMax + searchLimitMax ${deepest} exceeds the serve-node's searchDepthMax ${node.searchDepthMax}`,
    limits.waitMsMax > node.waitMsMax &&
      `waitMsMax ${limits.waitMsMax} exceeds the serve-node's waitMsMax ${node.waitMsMax}`,
    config.serveGetBatchKeysMax > node.getBatchKeysMax &&
      `serveGetBatchKeysMax ${config.serveGetBatchKeysMax} exceeds the serve-node's getBatchKeysMax ${node.getBatchKeysMax}`,
  ].filter(isStated);
}

/** The checks above list `condition && message`: the messages of the conditions that hold. */
function isStated(item: string | false): item is string {
  return typeof item === 'string';
}
