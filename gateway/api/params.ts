/**
 * The query parameters of the public API, one schema each group, named as on the wire. The
 * gateway checks them itself (validation.ts, consistency.ts) with the error codes its tests pin;
 * these give their types and their OpenAPI parameters.
 */
import { type Static, Type } from '@sinclair/typebox';
import { ConsistencyLevel } from './shapes.js';
import { WRITE_WAITS } from './constants.js';

const Count = (description: string) => Type.Integer({ minimum: 0, description });

export const ReadQuery = Type.Object({
  consistency: Type.Optional(ConsistencyLevel),
  wait_ms: Type.Optional(Count('longest the read waits for its token (waitMsDefault)')),
  token: Type.Optional(Type.String({ description: 'the token, when no header can carry it' })),
});
export type ReadQuery = Static<typeof ReadQuery>;

const Filter = Type.String({
  description: 'a filter on filterable fields: `year >= 2000 AND tags IN [a, b]`',
});
const Sort = Type.String({ description: 'sortable fields: `field:asc,other:desc`' });

export const ScanQuery = Type.Composite([
  ReadQuery,
  Type.Object({
    prefix: Type.Optional(Type.String({ description: 'only keys that start with it' })),
    start: Type.Optional(Type.String({ description: 'the first key (inclusive)' })),
    end: Type.Optional(Type.String({ description: 'the last key (exclusive)' })),
    limit: Type.Optional(Type.Integer({ minimum: 1 })),
    cursor: Type.Optional(Type.String({ description: "the previous page's cursor" })),
    filter: Type.Optional(Filter),
    sort: Type.Optional(Sort),
  }),
]);
export type ScanQuery = Static<typeof ScanQuery>;

export const SearchQuery = Type.Composite([
  ReadQuery,
  Type.Object({
    q: Type.String({ minLength: 1, description: 'the full-text query' }),
    limit: Type.Optional(Type.Integer({ minimum: 1 })),
    offset: Type.Optional(Count('hits to skip')),
    highlight: Type.Optional(Type.Boolean({ description: 'mark matches in `highlights`' })),
    filter: Type.Optional(Filter),
    sort: Type.Optional(Sort),
    facets: Type.Optional(Type.String({ description: 'fields to count values of: `a,b`' })),
  }),
]);
export type SearchQuery = Static<typeof SearchQuery>;

export const WriteQuery = Type.Object({
  token: Type.Optional(Type.String({ description: 'the token, when no header can carry it' })),
  wait: Type.Optional(
    Type.Union(
      WRITE_WAITS.map((wait) => Type.Literal(wait)),
      {
        description:
          'applied: answer once every serve-node hosting the write has applied it (504 not_caught_up past wait_ms)',
      },
    ),
  ),
  wait_ms: Type.Optional(Count('longest a wait=applied write waits (waitMsDefault)')),
});
export type WriteQuery = Static<typeof WriteQuery>;

export const ChangesQuery = Type.Object({
  token: Type.Optional(Type.String({ description: 'resume after this feed position' })),
  collection: Type.Optional(Type.String({ description: 'follow one collection' })),
  from: Type.Optional(
    Type.Union([Type.Literal('start'), Type.Literal('now')], { description: 'without a token' }),
  ),
  limit: Type.Optional(Type.Integer({ minimum: 1, description: 'end after this many events' })),
  removed: Type.Optional(
    Type.Union([Type.Literal('fail'), Type.Literal('skip')], {
      description: 'skip: resume past records retention removed (410 otherwise)',
    }),
  ),
  filter: Type.Optional(Filter),
});
export type ChangesQuery = Static<typeof ChangesQuery>;
