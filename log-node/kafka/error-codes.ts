/**
 * The one table from the log's errors (TailbaseError codes) to Kafka's error codes: clients
 * switch on Kafka's numbers to decide whether to retry, refresh metadata or give up, so each log
 * error maps to the Kafka error whose client reaction is the right one.
 */
import { TailbaseError } from '../../shared/errors.js';
import { ErrorCode, type ErrorCodeValue } from '../../shared/kafka/index.js';
import { refinedErrorMessage } from '../../shared/kafka-log/errors.js';

const BY_LOG_CODE: Readonly<Record<string, ErrorCodeValue>> = {
  invalid_batch: ErrorCode.CORRUPT_MESSAGE,
  invalid_record: ErrorCode.INVALID_RECORD,
  unsupported_compression: ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
  batch_too_large: ErrorCode.MESSAGE_TOO_LARGE,
  batch_inflated_too_large: ErrorCode.MESSAGE_TOO_LARGE,
  record_too_large: ErrorCode.MESSAGE_TOO_LARGE,
  too_many_records: ErrorCode.RECORD_LIST_TOO_LARGE,
  sequence_gap: ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
  // Sequences are dense, so a batch older than the remembered ones was appended long ago.
  sequence_too_old: ErrorCode.DUPLICATE_SEQUENCE_NUMBER,
  invalid_producer_epoch: ErrorCode.INVALID_PRODUCER_EPOCH,
  unknown_producer: ErrorCode.UNKNOWN_PRODUCER_ID,
  unknown_topic: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
  invalid_partition: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
  invalid_topic: ErrorCode.INVALID_TOPIC_EXCEPTION,
  collection_id_collision: ErrorCode.POLICY_VIOLATION,
  invalid_topic_config: ErrorCode.INVALID_CONFIG,
  offset_out_of_range: ErrorCode.OFFSET_OUT_OF_RANGE,
  // Another log-node stores it: the client refreshes its metadata and goes there.
  partition_not_hosted: ErrorCode.NOT_LEADER_OR_FOLLOWER,
  shutting_down: ErrorCode.NOT_LEADER_OR_FOLLOWER,
  partition_failed: ErrorCode.KAFKA_STORAGE_ERROR,
  // Its message names it (refinedErrorMessage): nothing was stored, unlike a storage error.
  disk_full: ErrorCode.KAFKA_STORAGE_ERROR,
  // Retriable: the node is busy, not wrong.
  append_queue_full: ErrorCode.REQUEST_TIMED_OUT,
  too_many_long_polls: ErrorCode.REQUEST_TIMED_OUT,
  invalid_parameter: ErrorCode.INVALID_REQUEST,
};

/** Kafka's error code for a failure of the log; an unexpected one is UNKNOWN_SERVER_ERROR. */
export function kafkaErrorCode(error: unknown): ErrorCodeValue {
  if (!(error instanceof TailbaseError)) return ErrorCode.UNKNOWN_SERVER_ERROR;
  return (
    BY_LOG_CODE[error.code] ??
    (error.status === 503 ? ErrorCode.KAFKA_STORAGE_ERROR : ErrorCode.UNKNOWN_SERVER_ERROR)
  );
}

/** The message a client may see for a failure: the log's own for its errors, nothing else. */
export function kafkaErrorMessage(error: unknown): string | null {
  return error instanceof TailbaseError ? refinedErrorMessage(error) : null;
}
