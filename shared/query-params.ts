/** Query parameters every node's HTTP API parses the same way, with the same 400s. */
import { badRequest } from './errors.js';

/**
 * A non-negative integer parameter in [min, max]; `fallback` when absent (required when there is
 * none). Anything else, a sign, a fraction or digits past 2^53 included, is 400 `invalid_parameter`.
 */
export function integerParam(
  raw: string | undefined,
  name: string,
  min: number,
  max: number,
  fallback?: number,
): number {
  if (raw === undefined || raw === '') return checkInteger(undefined, name, min, max, fallback);
  return checkInteger(/^\d{1,16}$/.test(raw) ? Number(raw) : NaN, name, min, max);
}

/**
 * An integer parameter whose bounds are checked where it is used (checkInteger): undefined when
 * absent; anything but digits becomes NaN, which that check refuses.
 */
export function optionalInteger(raw: string | undefined): number | undefined {
  if (raw === undefined || raw === '') return undefined;
  return /^\d{1,16}$/.test(raw) ? Number(raw) : NaN;
}

/** A parameter already a number (an in-process call's): the same bounds and 400s as integerParam. */
export function checkInteger(
  value: number | undefined,
  name: string,
  min: number,
  max: number,
  fallback?: number,
): number {
  if (value === undefined) {
    if (fallback === undefined) {
      throw badRequest('invalid_parameter', `${name} is required`, { parameter: name });
    }
    return fallback;
  }
  if (!(Number.isSafeInteger(value) && value >= min && value <= max)) {
    throw badRequest('invalid_parameter', `${name} must be an integer in ${min}..${max}`, {
      parameter: name,
      min,
      max,
    });
  }
  return value;
}

export interface PartitionOffset {
  partition: number;
  offset: number;
}

/**
 * `P:O[,P:O...]` (a serve-node's `wait_for`): 1..`max` pairs of distinct partitions, each offset
 * a safe integer. Anything else is 400 `code`, naming `name`.
 */
export function partitionOffsetList(
  raw: string,
  name: string,
  max: number,
  code = 'invalid_parameter',
): PartitionOffset[] {
  const parts = raw === '' ? [] : raw.split(',');
  const pairs = parts.slice(0, max + 1).map((part) => {
    const match = /^(\d{1,9}):(\d{1,16})$/.exec(part);
    const offset = Number(match?.[2]);
    if (match === null || !Number.isSafeInteger(offset)) {
      throw badRequest(code, `${name} is partition:offset[,partition:offset...]`, {
        parameter: name,
        value: part.slice(0, 40),
      });
    }
    return { partition: Number(match[1]), offset };
  });
  return checkPartitionOffsets(pairs, name, max, code);
}

/** The bounds and 400s of partitionOffsetList, on pairs already numbers. */
function checkPartitionOffsets<T extends PartitionOffset>(
  pairs: readonly T[],
  name: string,
  max: number,
  code = 'invalid_parameter',
): T[] {
  if (pairs.length === 0 || pairs.length > max) {
    throw badRequest(code, `${name} lists 1..${max} partition:offset pairs`, { parameter: name });
  }
  for (const { partition, offset } of pairs) {
    if (
      !Number.isSafeInteger(partition) ||
      partition < 0 ||
      !Number.isSafeInteger(offset) ||
      offset < 0
    ) {
      throw badRequest(code, `${name} is partition:offset[,partition:offset...]`, {
        parameter: name,
      });
    }
  }
  if (new Set(pairs.map((pair) => pair.partition)).size !== pairs.length) {
    throw badRequest(code, `${name} names a partition twice`, { parameter: name });
  }
  return [...pairs];
}
