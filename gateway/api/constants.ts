/**
 * The names the public API and its clients share at run time. No imports: the browser entry of
 * the typed client loads this module as it is.
 */

/** Tokens travel in this header both ways (a `token` query parameter is accepted too). */
export const TOKEN_HEADER = 'Tailbase-Token';

export const CONSISTENCY_LEVELS = ['token', 'strong', 'eventual'] as const;
export type Consistency = (typeof CONSISTENCY_LEVELS)[number];

/** What a write may wait for before it answers (`wait=`): `applied` by every hosting serve-node. */
export const WRITE_WAITS = ['applied'] as const;
export type WriteWait = (typeof WRITE_WAITS)[number];
