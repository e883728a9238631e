/**
 * The answer of a multi-partition read (LogClient.fetch): per partition asked for, in that order,
 * its batches and offsets, or the error that partition alone failed with.
 */
import type { TailbaseError } from './errors.js';

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
