/**
 * Collection names, as every node checks them: a lowercase letter, then up to 63 of [a-z0-9_-],
 * not ending with an internal topic's name (shared/topics.ts: a prefixed internal topic ends so).
 */
import { badRequest } from './errors.js';
import { COLLECTION_PATTERN, isInternalTopic, INTERNAL_TOPICS } from './topics.js';

export { COLLECTION_PATTERN };

export function checkCollection(name: string): string {
  if (!COLLECTION_PATTERN.test(name)) {
    throw badRequest('invalid_collection', `collection must match ${COLLECTION_PATTERN.source}`, {
      collection: name.slice(0, 80),
    });
  }
  if (isInternalTopic(name)) {
    throw badRequest(
      'invalid_collection',
      `a collection name may not end with an internal topic's name (${INTERNAL_TOPICS.join(', ')})`,
      { collection: name },
    );
  }
  return name;
}
