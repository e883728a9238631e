/**
 * Assertions state invariants and stay on in production (TIGER_STYLE): a broken invariant in a
 * database is better stopped than served.
 */
export class AssertionError extends Error {
  override name = 'AssertionError';
}

export function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new AssertionError(message);
}
