/**
 * The positions of a multi-partition read from an in-process caller (`tailbase start`'s binding):
 * 1..max distinct topic-partitions, each at a safe integer offset, else 400.
 */
import { badRequest } from '../shared/errors.js';
import type { FetchPosition } from '../shared/log-api.js';

const FORMAT = 'topic:partition:offset[,topic:partition:offset...]';

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
