/**
 * The shape of one route's declaration, and the helper that writes one on a line or a few:
 * `route('GET /v1/status', { summary, scope, answers: { 200: json(Status) } })`. The gateway
 * registers its handlers from these (routes/declared.ts) and /openapi.json is generated from them.
 */
import type { TObject, TSchema } from '@sinclair/typebox';
import type { Scope } from '../../shared/api-keys.js';

export type HttpMethod = 'get' | 'put' | 'patch' | 'post' | 'delete';

export interface Body {
  schema: TSchema;
  /** Media types the body may come in (the first is the usual one). */
  contentTypes: readonly string[];
  description?: string;
}

/** Error codes a route answers, by status; each with the shared error body. */
export type ErrorCodes = Partial<Record<number, readonly string[]>>;

export interface RouteSpec {
  summary: string;
  /** The API-key scope the route needs when keys are configured; none: open to all. */
  scope?: Scope;
  /** Whether the route reads or answers a `Tailbase-Token`. */
  token?: boolean;
  query?: TObject;
  body?: Body;
  answers: Partial<Record<number, Body>>;
  errors?: ErrorCodes;
}

export interface RouteDeclaration extends RouteSpec {
  method: HttpMethod;
  /** OpenAPI's form: `/v1/collections/{collection}/docs/{key}`. */
  path: string;
}

export const json = (schema: TSchema, description?: string): Body => ({
  schema,
  contentTypes: ['application/json'],
  description,
});

/** `'PUT /v1/collections/{collection}/docs/{key}'` and its spec, as a declaration. */
export function route(line: `${Uppercase<HttpMethod>} /${string}`, spec: RouteSpec) {
  const [method, path] = line.split(' ') as [Uppercase<HttpMethod>, string];
  return { ...spec, method: method.toLowerCase() as HttpMethod, path } satisfies RouteDeclaration;
}

/** The path parameters of a declared path, in order. */
export function pathParameters(path: string): string[] {
  return [...path.matchAll(/\{(\w+)\}/g)].map((match) => match[1]);
}

/** A declared path as hono routes it: `{key}` becomes `:key`. */
export function honoPath(path: string): string {
  return path.replace(/\{(\w+)\}/g, ':$1');
}
