/** What a field path may be in a filter, a sort or a facets list: the settings' dotted paths. */
import { utf8Bytes } from './filter-error.js';

/** Why `path` is not a field path, or null when it is one. */
export function fieldPathProblem(path: string): string | null {
  if (path.includes('\0')) return 'a NUL character is not allowed in a field path';
  if (path.split('.').some((segment) => segment.length === 0)) {
    return `the field ${JSON.stringify(path)} has an empty segment (a path is like "a.b")`;
  }
  return null;
}

export const fieldPathTooLong = (path: string, bytesMax: number): boolean =>
  utf8Bytes(path) > bytesMax;
