/**
 * The answer of a multi-partition read (`GET /internal/fetch`, shared/FORMAT.md): a uint32 BE
 * head length, the head (JSON `{"partitions": [...]}`, one entry per partition asked for, in that
 * order), then each entry's batches back to back, `bytes` long each. An entry is either
 * `{topic, partition, logStartOffset, endOffset, bytes}` or `{topic, partition, status, error}`.
 */
import { errorFromBody, TailbaseError } from './errors.js';

export interface FetchedPartition {
  topic: string;
  partition: number;
  logStartOffset: number;
  endOffset: number;
  /** Whole batches as stored; the first may start before the offset asked for. */
  batches: Buffer;
}

export interface FailedPartition {
  topic: string;
  partition: number;
  error: TailbaseError;
}

export type FetchOutcome = FetchedPartition | FailedPartition;

const HEAD_LENGTH_BYTES = 4;

export function encodeFetchAnswer(outcomes: readonly FetchOutcome[]): Buffer {
  const entries = outcomes.map((outcome) =>
    'error' in outcome
      ? {
          topic: outcome.topic,
          partition: outcome.partition,
          status: outcome.error.status,
          ...outcome.error.toBody(),
        }
      : {
          topic: outcome.topic,
          partition: outcome.partition,
          logStartOffset: outcome.logStartOffset,
          endOffset: outcome.endOffset,
          bytes: outcome.batches.length,
        },
  );
  const head = Buffer.from(JSON.stringify({ partitions: entries }));
  const length = Buffer.allocUnsafe(HEAD_LENGTH_BYTES);
  length.writeUInt32BE(head.length);
  const batches = outcomes.flatMap((outcome) => ('error' in outcome ? [] : [outcome.batches]));
  return Buffer.concat([length, head, ...batches]);
}

export function decodeFetchAnswer(body: Buffer): FetchOutcome[] {
  const malformed = () =>
    new TailbaseError(502, 'peer_error', 'the log-node sent a malformed fetch');
  if (body.length < HEAD_LENGTH_BYTES) throw malformed();
  const headEnd = HEAD_LENGTH_BYTES + body.readUInt32BE(0);
  if (headEnd > body.length) throw malformed();
  let head: { partitions?: unknown };
  try {
    head = JSON.parse(body.toString('utf8', HEAD_LENGTH_BYTES, headEnd)) as typeof head;
  } catch {
    throw malformed();
  }
  if (!Array.isArray(head.partitions)) throw malformed();
  let at = headEnd;
  const outcomes = head.partitions.map((entry: Record<string, any>): FetchOutcome => {
    if (entry.error !== undefined) {
      return {
        topic: entry.topic,
        partition: entry.partition,
        error: errorFromBody(entry.status, entry),
      };
    }
    const end = at + Number(entry.bytes);
    if (!(end <= body.length)) throw malformed();
    const batches = body.subarray(at, end);
    at = end;
    return {
      topic: entry.topic,
      partition: entry.partition,
      logStartOffset: entry.logStartOffset,
      endOffset: entry.endOffset,
      batches,
    };
  });
  if (at !== body.length) throw malformed();
  return outcomes;
}
