/**
 * GET /openapi.json: an OpenAPI 3.1 description generated from the route declarations, so it
 * cannot drift from what the gateway serves (test/integration/openapi.test.ts compares the two).
 */
import type { TSchema } from '@sinclair/typebox';
import { COLLECTION_PATTERN } from '../../shared/collection-name.js';
import { TOKEN_HEADER } from './constants.js';
import { type Body, type ErrorCodes, pathParameters, type RouteDeclaration } from './declare.js';
import { API_ROUTES } from './routes.js';

/** The version of this description's API: the `/v1` paths. */
export const API_VERSION = '1';

/** Errors every route may answer, and those of routes behind an API-key scope. */
const COMMON_ERRORS: ErrorCodes = { 500: ['internal'] };
const GUARDED_ERRORS: ErrorCodes = { 401: ['unauthorized', 'invalid_api_key'], 403: ['forbidden'] };

/** A schema as plain JSON: TypeBox's symbol-keyed markers are not part of JSON Schema. */
const plain = (schema: TSchema): Record<string, unknown> => JSON.parse(JSON.stringify(schema));

const PATH_PARAMETERS: Record<string, Record<string, unknown>> = {
  collection: {
    description: 'the collection',
    schema: { type: 'string', pattern: COLLECTION_PATTERN.source },
  },
  view: {
    description: 'the view (a name no collection has)',
    schema: { type: 'string', pattern: COLLECTION_PATTERN.source },
  },
  key: { description: "the document's key (1..1024 bytes of UTF-8)", schema: { type: 'string' } },
  node: { description: 'a serve-node, by its index in /v1/status', schema: { type: 'string' } },
  file: { description: "a file name of the console's build", schema: { type: 'string' } },
};

const tokenHeader = {
  description: 'the read-your-writes token, merged over what the request sent',
  schema: { type: 'string' },
};

function errorSchema(codes: readonly string[]) {
  return {
    type: 'object',
    required: ['error'],
    properties: {
      error: {
        type: 'object',
        required: ['code', 'message'],
        properties: { code: { enum: codes }, message: { type: 'string' } },
        additionalProperties: true,
      },
    },
  };
}

function content(body: Body) {
  return Object.fromEntries(
    body.contentTypes.map((type) => [type, { schema: plain(body.schema) }]),
  );
}

function operation(operationId: string, declared: RouteDeclaration) {
  const parameters: Record<string, unknown>[] = pathParameters(declared.path).map((name) => ({
    name,
    in: 'path',
    required: true,
    ...PATH_PARAMETERS[name],
  }));
  const query = declared.query;
  for (const [name, schema] of Object.entries(query?.properties ?? {})) {
    const { description, ...rest } = plain(schema);
    const required = query?.required?.includes(name) ?? false;
    parameters.push({ name, in: 'query', required, description, schema: rest });
  }
  if (declared.token) parameters.push({ name: TOKEN_HEADER, in: 'header', ...tokenHeader });
  const responses: Record<string, unknown> = {};
  for (const [status, body] of Object.entries(declared.answers)) {
    responses[status] = {
      description: body?.description ?? declared.summary,
      ...(declared.token ? { headers: { [TOKEN_HEADER]: tokenHeader } } : {}),
      content: content(body as Body),
    };
  }
  const errors = [COMMON_ERRORS, declared.errors ?? {}, declared.scope ? GUARDED_ERRORS : {}];
  const codes = new Map<number, Set<string>>();
  for (const list of errors) {
    for (const [status, names] of Object.entries(list)) {
      const into = codes.get(Number(status)) ?? new Set<string>();
      for (const name of names ?? []) into.add(name);
      codes.set(Number(status), into);
    }
  }
  for (const [status, names] of [...codes].sort(([a], [b]) => a - b)) {
    const schema = errorSchema([...names]);
    responses[status] = {
      description: `error codes: ${[...names].join(', ')}`,
      content: { 'application/json': { schema } },
    };
  }
  return {
    operationId,
    summary: declared.summary,
    ...(declared.scope ? { 'x-tailbase-scope': declared.scope } : { security: [] }),
    parameters,
    ...(declared.body
      ? {
          requestBody: {
            required: true,
            description: declared.body.description,
            content: content(declared.body),
          },
        }
      : {}),
    responses,
  };
}

export function openApiDocument(
  routes: Record<string, RouteDeclaration> = API_ROUTES,
): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const [operationId, declared] of Object.entries(routes)) {
    paths[declared.path] ??= {};
    paths[declared.path][declared.method] = operation(operationId, declared);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'tailbase',
      version: API_VERSION,
      description:
        'A database built as The Log describes. Writes answer a token; reads that send it ' +
        `(the ${TOKEN_HEADER} header) see those writes.`,
    },
    security: [{ bearer: [] }, { apiKey: [] }],
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'an API key' },
        apiKey: { type: 'apiKey', in: 'header', name: 'X-Api-Key' },
      },
    },
    paths,
  };
}
