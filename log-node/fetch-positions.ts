/**
 * The positions of a multi-partition read: `topic:partition:offset[,...]` in the `from` parameter
 * of `GET /internal/fetch` (topic names never hold ':' or ','), or the same as numbers from an
 * in-process caller. 1..max distinct topic-partitions, each at a safe integer offset, else 400.
 */
import { badRequest } from '../shared/errors.js';
import type { FetchPosition } from '../shared/log-api.js';

const FORMAT = 'topic:partition:offset[,topic:partition:offset...]';

export function parseFetchPositions(raw: string, max: number): FetchPosition[] {
  const parts = raw === '' ? [] : raw.split(',');
  const positions = parts.slice(0, max + 1).map((part) => {
    const match = /^([^:,/]{1,249}):(\d{1,9}):(\d{1,16})$/.exec(part);
    if (match === null) {
      throw badRequest('invalid_parameter', `from is ${FORMAT}`, {
        parameter: 'from',
        value: part.slice(0, 80),
      });
    }
    return { topic: match[1], partition: Number(match[2]), offset: Number(match[3]) };
  });
  return checkFetchPositions(positions, max);
}

export function checkFetchPositions(
  positions: readonly FetchPosition[],
  max: number,
): FetchPosition[] {
  if (positions.length === 0 || positions.length > max) {
    throw badRequest('invalid_parameter', `from lists 1..${max} topic-partitions`, {
      parameter: 'from',
    });
  }
  for (const { topic, partition, offset } of positions) {
    if (
      typeof topic !== 'string' ||
      !Number.isSafeInteger(partition) ||
      partition < 0 ||
      !Number.isSafeInteger(offset) ||
      offset < 0
    ) {
      throw badRequest('invalid_parameter', `from is ${FORMAT}`, { parameter: 'from' });
    }
  }
  const distinct = new Set(positions.map(({ topic, partition }) => `${topic}:${partition}`));
  if (distinct.size !== positions.length) {
    throw badRequest('invalid_parameter', 'from names a topic-partition twice', {
      parameter: 'from',
    });
  }
  return [...positions];
}
