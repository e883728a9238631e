/** Collection names, as every node checks them: a lowercase letter, then up to 63 of [a-z0-9_-]. */
import { badRequest } from './errors.js';

export const COLLECTION_PATTERN = /^[a-z][a-z0-9_-]{0,63}$/;

export function checkCollection(name: string): string {
  if (!COLLECTION_PATTERN.test(name)) {
    throw badRequest('invalid_collection', `collection must match ${COLLECTION_PATTERN.source}`, {
      collection: name.slice(0, 80),
    });
  }
  return name;
}
