/**
 * Every public route of the gateway (DESIGN.md's API table), declared once. Adding a route is one
 * entry here plus its handler; the OpenAPI test fails until both exist.
 */
import { Type } from '@sinclair/typebox';
import { json, route, type ErrorCodes } from './declare.js';
import { ChangesQuery, ReadQuery, ScanQuery, SearchQuery, WriteQuery } from './params.js';
import {
  BulkAnswer,
  BulkItem,
  ChangeLine,
  CollectionList,
  DropAnswer,
  Health,
  OpenApiDocument,
  Readiness,
  RebuildAnswer,
  ScanPage,
  SearchAnswer,
  ServeNodeStatus,
  SettingsAnswer,
  SettingsBody,
  SettingsPatch,
  SettingsView,
  Status,
  StoredDocument,
  Text,
  ViewDefinitionBody,
  ViewDropAnswer,
  ViewInfo,
  ViewList,
  WriteAnswer,
} from './shapes.js';

/** What a write may answer besides its own checks: the token, and a log that could not take it. */
const WRITE_ERRORS: ErrorCodes = {
  400: ['invalid_collection', 'invalid_utf8', 'invalid_token', 'invalid_parameter'],
  503: ['overloaded', 'shutting_down', 'append_queue_full', 'log_unavailable'],
  /** wait=applied past wait_ms: the write is stored; `behind` says which nodes lag, `token` is its. */
  504: ['not_caught_up'],
  507: ['disk_full'],
};
/** 409 `view_read_only`: a view is written only by processing its source (DELETE /v1/views drops one). */
const VIEW_READ_ONLY = 'view_read_only';
/** 503 `write_outcome_unknown`: the log did not confirm in time; the write may be stored. */
const OUTCOME_UNKNOWN = 'write_outcome_unknown';
const READ_ERRORS: ErrorCodes = {
  400: ['invalid_collection', 'invalid_utf8', 'invalid_token', 'invalid_parameter'],
  503: ['partition_unavailable', 'too_many_waiters', 'rebuilding', 'view_processor_unavailable'],
  504: ['not_caught_up'],
};
const DOCUMENT_ERRORS = ['invalid_json', 'invalid_document', 'invalid_number', 'document_too_deep'];
const FILTER_ERRORS = ['invalid_filter', 'field_not_filterable'];
const SORT_ERRORS = ['invalid_sort', 'field_not_sortable'];

/** Merges code lists by status. */
function errors(...lists: ErrorCodes[]): ErrorCodes {
  const merged: Record<number, string[]> = {};
  for (const list of lists) {
    for (const [status, codes] of Object.entries(list)) {
      merged[Number(status)] = [...new Set([...(merged[Number(status)] ?? []), ...(codes ?? [])])];
    }
  }
  return merged;
}

const ndjson = (description: string) => ({
  schema: ChangeLine,
  contentTypes: ['application/x-ndjson', 'text/event-stream'],
  description,
});

/** What a settings write may answer: PUT and PATCH alike. */
const SETTINGS_ERRORS = errors(WRITE_ERRORS, {
  400: ['invalid_json', 'invalid_settings', 'invalid_topic_config'],
  404: ['collection_not_found'],
  409: ['collection_id_collision', 'view_topic_retired', VIEW_READ_ONLY],
  413: ['settings_too_large'],
  503: [OUTCOME_UNKNOWN],
});

export const API_ROUTES = {
  putDocument: route('PUT /v1/collections/{collection}/docs/{key}', {
    summary: 'write a JSON document',
    scope: 'write',
    token: true,
    query: WriteQuery,
    body: json(Type.Object({}, { additionalProperties: true }), 'the document, a JSON object'),
    answers: { 200: json(WriteAnswer) },
    errors: errors(WRITE_ERRORS, {
      400: ['invalid_key', ...DOCUMENT_ERRORS],
      409: [VIEW_READ_ONLY],
      413: ['document_too_large'],
      503: [OUTCOME_UNKNOWN],
    }),
  }),
  deleteDocument: route('DELETE /v1/collections/{collection}/docs/{key}', {
    summary: 'write a tombstone',
    scope: 'write',
    token: true,
    query: WriteQuery,
    answers: { 200: json(WriteAnswer) },
    errors: errors(WRITE_ERRORS, {
      400: ['invalid_key'],
      409: [VIEW_READ_ONLY],
      503: [OUTCOME_UNKNOWN],
    }),
  }),
  getDocument: route('GET /v1/collections/{collection}/docs/{key}', {
    summary: 'read one document',
    scope: 'read',
    token: true,
    query: ReadQuery,
    answers: { 200: json(StoredDocument) },
    errors: errors(READ_ERRORS, { 400: ['invalid_key'], 404: ['document_not_found'] }),
  }),
  bulk: route('POST /v1/collections/{collection}/docs', {
    summary: 'write many documents: NDJSON lines or a JSON array of {key, value}',
    scope: 'write',
    token: true,
    query: WriteQuery,
    body: {
      schema: Type.Array(BulkItem),
      contentTypes: ['application/x-ndjson', 'application/json'],
      description: 'one {key, value} a line (NDJSON), or a JSON array of them; value null deletes',
    },
    answers: { 200: json(BulkAnswer) },
    errors: errors(WRITE_ERRORS, {
      400: ['invalid_bulk', 'empty_bulk', 'invalid_record', 'invalid_key', ...DOCUMENT_ERRORS],
      409: [VIEW_READ_ONLY],
      413: ['bulk_too_large', 'too_many_records', 'document_too_large'],
      503: [OUTCOME_UNKNOWN],
    }),
  }),
  scan: route('GET /v1/collections/{collection}/docs', {
    summary: 'documents in key order across all partitions, a page at a time',
    scope: 'read',
    token: true,
    query: ScanQuery,
    answers: { 200: json(ScanPage) },
    errors: errors(READ_ERRORS, {
      400: ['invalid_cursor', ...FILTER_ERRORS, ...SORT_ERRORS],
      409: ['cursor_stale'],
    }),
  }),
  search: route('GET /v1/collections/{collection}/search', {
    summary: 'ranked full-text search (BM25), with filters, sort and facets',
    scope: 'read',
    token: true,
    query: SearchQuery,
    answers: { 200: json(SearchAnswer) },
    errors: errors(READ_ERRORS, {
      400: ['invalid_query', 'invalid_facets', ...FILTER_ERRORS, ...SORT_ERRORS],
    }),
  }),
  putSettings: route('PUT /v1/collections/{collection}/settings', {
    summary: "a collection's search settings and topic configs, a record in the log",
    scope: 'admin',
    token: true,
    query: WriteQuery,
    body: json(SettingsBody),
    answers: { 200: json(SettingsAnswer) },
    errors: SETTINGS_ERRORS,
  }),
  patchSettings: route('PATCH /v1/collections/{collection}/settings', {
    summary:
      "merges the fields given into the collection's settings (null resets one); a record in the log",
    scope: 'admin',
    token: true,
    query: WriteQuery,
    body: json(SettingsPatch),
    answers: { 200: json(SettingsAnswer) },
    errors: SETTINGS_ERRORS,
  }),
  getSettings: route('GET /v1/collections/{collection}/settings', {
    summary:
      "a collection's settings and topic configs, read from the log (every acknowledged write)",
    scope: 'read',
    answers: { 200: json(SettingsView) },
    errors: { 400: ['invalid_collection', 'invalid_utf8'], 404: ['collection_not_found'] },
  }),
  listCollections: route('GET /v1/collections', {
    summary:
      'every collection: partitions, records in its log, documents the serve-nodes hold, bytes on disk (log, LMDB, SQLite; null: unknown), settings version',
    scope: 'read',
    answers: { 200: json(CollectionList) },
  }),
  dropCollection: route('DELETE /v1/collections/{collection}', {
    summary:
      "drops a collection: its topic, its settings and every serve-node's tables; its tokens are refused after",
    scope: 'admin',
    answers: { 200: json(DropAnswer) },
    errors: {
      400: ['invalid_collection', 'invalid_utf8'],
      404: ['collection_not_found'],
      409: [VIEW_READ_ONLY, 'collection_has_views'],
      503: ['serve_node_unavailable', 'log_unavailable'],
      507: ['disk_full'],
    },
  }),
  putView: route('PUT /v1/views/{view}', {
    summary:
      'declares a view (a projection or a grouping of one source, a record in the log), or redefines one: the new version is built from the start of the source log beside the old, which serves until the new one has caught up and replaces it atomically',
    scope: 'admin',
    body: json(ViewDefinitionBody),
    answers: { 200: json(ViewInfo) },
    errors: {
      400: [
        'invalid_view',
        'invalid_collection',
        'invalid_json',
        'invalid_filter',
        'unknown_aggregate',
        'invalid_aggregate',
        'view_cycle',
        'view_name_taken',
      ],
      404: ['source_not_found'],
      409: ['view_exists', 'view_has_dependents', 'view_rebuilding'],
      413: ['view_too_large'],
      503: ['log_unavailable', OUTCOME_UNKNOWN],
    },
  }),
  listViews: route('GET /v1/views', {
    summary: 'every view: its definition, version and frontiers',
    scope: 'read',
    answers: { 200: json(ViewList) },
  }),
  getView: route('GET /v1/views/{view}', {
    summary:
      "a view's definition, version, topic, per source partition its frontier and lag, and a redefinition's rebuild progress",
    scope: 'read',
    answers: { 200: json(ViewInfo) },
    errors: { 400: ['invalid_collection', 'invalid_utf8'], 404: ['view_not_found'] },
  }),
  dropView: route('DELETE /v1/views/{view}', {
    summary: "drops a view: its definition, its topic and every serve-node's tables of it",
    scope: 'admin',
    answers: { 200: json(ViewDropAnswer) },
    errors: {
      400: ['invalid_collection', 'invalid_utf8'],
      404: ['view_not_found'],
      409: ['view_has_dependents'],
      503: ['serve_node_unavailable', 'log_unavailable'],
    },
  }),
  changes: route('GET /v1/changes', {
    summary: 'the change feed: NDJSON lines (or SSE events), resumable by token',
    scope: 'read',
    token: true,
    query: ChangesQuery,
    answers: {
      200: ndjson(
        "one event a line: a change, or on a view's feed a reset (`reset: true`: forget the " +
          "view's documents, its new version follows from its start); a last line {error} when " +
          'the feed fails',
      ),
    },
    errors: errors({
      400: ['invalid_token', 'invalid_parameter', 'invalid_collection', ...FILTER_ERRORS],
      410: ['records_removed'],
      503: ['too_many_feeds'],
    }),
  }),
  status: route('GET /v1/status', {
    summary: "partitions, log offsets, each serve-node's applied offsets and lag",
    scope: 'read',
    answers: { 200: json(Status) },
  }),
  serveNodeStatus: route('GET /v1/admin/serve-nodes/{node}/status', {
    summary: "a serve-node's own status, by its index in /v1/status",
    scope: 'admin',
    answers: { 200: json(ServeNodeStatus) },
    errors: { 404: ['serve_node_not_found'], 502: ['peer_error'] },
  }),
  rebuild: route('POST /v1/admin/serve-nodes/{node}/rebuild', {
    summary: "wipe a serve-node's stores and replay the log; poll its status for progress",
    scope: 'admin',
    answers: { 202: json(RebuildAnswer) },
    errors: { 404: ['serve_node_not_found'], 502: ['peer_error'] },
  }),
  openapi: route('GET /openapi.json', {
    summary: 'this description (OpenAPI 3.1)',
    answers: { 200: json(OpenApiDocument) },
  }),
  consolePage: route('GET /', {
    summary: 'the web console: status, rebuilds, queries, the change feed, settings',
    answers: { 200: { schema: Text, contentTypes: ['text/html'] } },
    errors: { 503: ['console_not_built'] },
  }),
  consoleAsset: route('GET /assets/{file}', {
    summary: "one of the console's scripts or styles (content-hashed names, cached a year)",
    answers: { 200: { schema: Text, contentTypes: ['text/javascript', 'text/css'] } },
    errors: { 404: ['not_found'], 503: ['console_not_built'] },
  }),
  health: route('GET /healthz', { summary: 'liveness', answers: { 200: json(Health) } }),
  ready: route('GET /readyz', {
    summary: 'readiness: the log answers and every partition has a serve-node up',
    answers: { 200: json(Readiness), 503: json(Readiness, 'not ready') },
  }),
  metrics: route('GET /metrics', {
    summary: 'Prometheus metrics',
    scope: 'read',
    answers: { 200: { schema: Text, contentTypes: ['text/plain'] } },
  }),
};

export type ApiRouteName = keyof typeof API_ROUTES;
