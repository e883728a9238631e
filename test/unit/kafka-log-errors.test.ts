// Proves the log's errors that share a Kafka code with another cross the Kafka transport as the
// log said them (a full disk, a collection id collision), while any other broker's answer of the
// same code, or the log's code under another Kafka code, keeps the Kafka code's own meaning.
import { describe, expect, it } from 'vitest';
import { kafkaErrorCode, kafkaErrorMessage } from '../../log-node/kafka/error-codes.js';
import { TailbaseError } from '../../shared/errors.js';
import { ErrorCode } from '../../shared/kafka/index.js';
import { logErrorOf } from '../../shared/kafka-log/errors.js';

const across = (error: TailbaseError) =>
  logErrorOf(kafkaErrorCode(error), kafkaErrorMessage(error));

describe('log errors over the Kafka transport', () => {
  it('keeps disk_full and collection_id_collision, and their messages', () => {
    const diskFull = new TailbaseError(507, 'disk_full', 'the disk is full; nothing was kept');
    expect(across(diskFull)).toMatchObject({ status: 507, code: 'disk_full' });
    expect(across(diskFull).message).toContain('the disk is full; nothing was kept');
    const collision = new TailbaseError(409, 'collection_id_collision', 'id 7 is taken');
    expect(across(collision)).toMatchObject({ status: 409, code: 'collection_id_collision' });
  });

  it('leaves the codes they share as they are for anything else', () => {
    const failed = new TailbaseError(503, 'partition_failed', 'disk_full: not a prefix of ours');
    expect(across(failed)).toMatchObject({ status: 503, code: 'partition_failed' });
    expect(logErrorOf(ErrorCode.KAFKA_STORAGE_ERROR, 'log dir offline')).toMatchObject({
      status: 503,
      code: 'partition_failed',
    });
    expect(logErrorOf(ErrorCode.POLICY_VIOLATION, null)).toMatchObject({
      status: 409,
      code: 'topic_policy_violation',
    });
    expect(
      logErrorOf(ErrorCode.INVALID_REQUEST, '[tailbase disk_full] under another code'),
    ).toMatchObject({
      status: 400,
      code: 'invalid_parameter',
    });
    expect(logErrorOf(ErrorCode.KAFKA_STORAGE_ERROR, '[tailbase constructor] x')).toMatchObject({
      code: 'partition_failed',
    });
  });
});
