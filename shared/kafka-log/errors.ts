/**
 * Kafka's error codes as the log contract's errors (TailbaseError codes): the reverse of the
 * log-node listener's table, so a gateway or serve-node reacts to a Kafka broker's answer as it
 * reacts to the log's own error (the gateway's sequence bookkeeping switches on these codes).
 */
import { TailbaseError, type ErrorDetails } from '../errors.js';
import { ErrorCode } from '../kafka/index.js';

const BY_KAFKA_CODE: Readonly<Record<number, readonly [status: number, code: string]>> = {
  [ErrorCode.CORRUPT_MESSAGE]: [400, 'invalid_batch'],
  [ErrorCode.INVALID_RECORD]: [400, 'invalid_record'],
  [ErrorCode.UNSUPPORTED_COMPRESSION_TYPE]: [400, 'unsupported_compression'],
  [ErrorCode.MESSAGE_TOO_LARGE]: [413, 'batch_too_large'],
  [ErrorCode.RECORD_LIST_TOO_LARGE]: [413, 'too_many_records'],
  [ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER]: [409, 'sequence_gap'],
  // Without the original offsets (a broker that no longer remembers the batch's): the batch
  // may be this one, so its outcome is unknown, as the log-node's own sequence_too_old.
  [ErrorCode.DUPLICATE_SEQUENCE_NUMBER]: [409, 'sequence_too_old'],
  [ErrorCode.INVALID_PRODUCER_EPOCH]: [409, 'invalid_producer_epoch'],
  [ErrorCode.PRODUCER_FENCED]: [409, 'invalid_producer_epoch'],
  [ErrorCode.UNKNOWN_PRODUCER_ID]: [409, 'unknown_producer'],
  [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]: [404, 'unknown_topic'],
  [ErrorCode.INVALID_TOPIC_EXCEPTION]: [400, 'invalid_topic'],
  [ErrorCode.INVALID_PARTITIONS]: [400, 'invalid_partition'],
  [ErrorCode.POLICY_VIOLATION]: [409, 'topic_policy_violation'],
  [ErrorCode.INVALID_CONFIG]: [400, 'invalid_topic_config'],
  [ErrorCode.OFFSET_OUT_OF_RANGE]: [400, 'offset_out_of_range'],
  [ErrorCode.NOT_LEADER_OR_FOLLOWER]: [503, 'partition_not_hosted'],
  [ErrorCode.LEADER_NOT_AVAILABLE]: [503, 'partition_not_hosted'],
  [ErrorCode.KAFKA_STORAGE_ERROR]: [503, 'partition_failed'],
  // Past the broker's own wait: for acks=all the batch may or may not be replicated.
  [ErrorCode.REQUEST_TIMED_OUT]: [503, 'log_request_timed_out'],
  [ErrorCode.NOT_ENOUGH_REPLICAS]: [503, 'not_enough_replicas'],
  [ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND]: [503, 'log_request_timed_out'],
  [ErrorCode.TOPIC_AUTHORIZATION_FAILED]: [403, 'log_forbidden'],
  [ErrorCode.CLUSTER_AUTHORIZATION_FAILED]: [403, 'log_forbidden'],
  [ErrorCode.SASL_AUTHENTICATION_FAILED]: [403, 'log_forbidden'],
  [ErrorCode.INVALID_REQUEST]: [400, 'invalid_parameter'],
};

const NAME_OF_CODE = new Map<number, string>(
  Object.entries(ErrorCode).map(([name, code]) => [code, name]),
);

/** Leadership errors: refresh the metadata and send the request again, to the new leader. */
export const LEADER_ERRORS: ReadonlySet<number> = new Set([
  ErrorCode.NOT_LEADER_OR_FOLLOWER,
  ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
  ErrorCode.LEADER_NOT_AVAILABLE,
  ErrorCode.FENCED_LEADER_EPOCH,
  ErrorCode.UNKNOWN_LEADER_EPOCH,
]);

function kafkaErrorName(errorCode: number): string {
  return NAME_OF_CODE.get(errorCode) ?? `error ${errorCode}`;
}

/**
 * Log errors that share their Kafka code with another whose meaning differs for the caller: a
 * full disk (nothing stored, retry once there is room) where any other storage error may have
 * stored the batch, a full append queue (refused before it was queued) where any other timeout
 * may have stored it, and a collection id collision where a policy violation says nothing more.
 * A tailbase log-node begins their errorMessage with the log's code (`[tailbase disk_full] ...`),
 * so they reach the gateway as the log said them; another broker's answer keeps the code's own
 * meaning.
 */
const REFINED_CODES: Readonly<Record<string, { kafka: number; status: number }>> = {
  disk_full: { kafka: ErrorCode.KAFKA_STORAGE_ERROR, status: 507 },
  append_queue_full: { kafka: ErrorCode.REQUEST_TIMED_OUT, status: 503 },
  collection_id_collision: { kafka: ErrorCode.POLICY_VIOLATION, status: 409 },
};

/** The errorMessage a tailbase log-node answers for a log error (REFINED_CODES). */
export function refinedErrorMessage(error: TailbaseError): string {
  return Object.hasOwn(REFINED_CODES, error.code)
    ? `[tailbase ${error.code}] ${error.message}`
    : error.message;
}

function refinedCode(errorCode: number, message: string | null): [number, string] | null {
  const code = /^\[tailbase ([a-z_]+)\] /.exec(message ?? '')?.[1];
  const refined =
    code !== undefined && Object.hasOwn(REFINED_CODES, code) ? REFINED_CODES[code] : undefined;
  return refined?.kafka === errorCode ? [refined.status, code!] : null;
}

/** A broker's error answer as the log contract's error; `message` is the broker's, if any. */
export function logErrorOf(
  errorCode: number,
  message: string | null,
  details: ErrorDetails = {},
): TailbaseError {
  const [status, code] = refinedCode(errorCode, message) ??
    BY_KAFKA_CODE[errorCode] ?? [502, 'log_error'];
  const name = kafkaErrorName(errorCode);
  return new TailbaseError(status, code, message ? `${name}: ${message}` : name, {
    ...details,
    kafkaError: name,
  });
}

/**
 * The errorMessage of a Produce answer with error NONE that a tailbase log-node gives a batch it
 * already holds (a retry of its producer id and sequence): the offsets are the original batch's.
 * Kafka's own brokers answer such a retry the same way but say nothing, so another client reads
 * this as success, which it is; tailbase's gateway reads it to check the batch was its own.
 */
export const DUPLICATE_BATCH_MESSAGE = 'duplicate batch: these are the offsets it was given';

/**
 * The broker config in which a tailbase log-node says which partitions it stores (a comma list),
 * in DescribeConfigs of its broker resource: how its peers and this client learn the split.
 */
export const HOSTED_PARTITIONS_CONFIG = 'tailbase.hosted.partitions';

/** The partition numbers of a HOSTED_PARTITIONS_CONFIG value (none where it is absent). */
export function hostedPartitionsOf(value: string | null | undefined): number[] {
  return (value ?? '')
    .split(',')
    .filter((part) => part !== '')
    .map(Number);
}

/**
 * The read-only topic config in which a tailbase log-node says how many topics of the name were
 * dropped before this one (shared/topics.ts, `incarnation`), so tokens of a dropped collection are
 * refused over the Kafka transport too. A Kafka broker has no such config: its topics read as 0.
 */
export const INCARNATION_CONFIG = 'tailbase.incarnation';

/** A partition's answer that its leader moved: the request is sent again after a refresh. */
export class LeaderMoved extends Error {
  constructor(readonly error: TailbaseError) {
    super(error.message);
  }
}
