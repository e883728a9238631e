/**
 * Every call the console makes to the gateway, in one place, so it can move to the typed client
 * (`import { Tailbase } from 'tailbase'`) in one step. The API key lives only in this tab's
 * sessionStorage and goes out as `Authorization: Bearer KEY`; the newest token the gateway
 * answers is sent with the next calls, so a search after a settings change reads it.
 */

export interface ReplicaStatus {
  node: number;
  up: boolean;
  applied: number | null;
  lag: number | null;
  state: string | null;
}

export interface PartitionStatus {
  topic: string;
  partition: number;
  /** An internal topic (settings, consumer offsets): listed apart, left out of the sums. */
  internal: boolean;
  logStartOffset: number;
  endOffset: number;
  replicas: ReplicaStatus[];
}

export interface ServeNodeStatus {
  node: number;
  nodeId: string | null;
  up: boolean;
  ready: boolean;
  partitions: number[];
  /** Collections being re-indexed after a settings change, with the documents copied so far. */
  reindexing: Array<{ collection: string; copied: number; documents: number }>;
}

/** One collection: its partitions' replicas summed up by the gateway. */
export interface CollectionStatus {
  collection: string;
  partitions: number;
  endOffset: number;
  lagRecords: number;
  state: 'down' | 'rebuilding' | 'replaying' | 'tailing';
}

export interface ClusterStatus {
  clusterId: string;
  version: string;
  lagRecords: number;
  collections: CollectionStatus[];
  partitions: PartitionStatus[];
  serveNodes: ServeNodeStatus[];
}

/** A collection as GET /v1/collections lists it. */
export interface CollectionSummary {
  collection: string;
  incarnation: number;
  partitions: number;
  records: number;
  /** The documents the serve-nodes hold; null when one did not answer. */
  documents: number | null;
  /** Bytes on disk; each part null when the cluster cannot say it (unknown, not 0). */
  bytes: { log: number | null; lmdb: number | null; sqlite: number | null; total: number | null };
  settingsVersion: number | null;
}

/** A view as GET /v1/views lists it (gateway/api/shapes.ts ViewInfo). */
export interface ViewInfo {
  view: string;
  definition: Record<string, unknown>;
  version: number;
  source: string;
  /** Per source partition, how far it has processed; null: no processor answered. */
  frontiers: Array<{
    partition: number;
    frontier: number;
    lag: number;
    coversFrom?: number;
  }> | null;
  refusedRecords: number | null;
  lateRecords: number | null;
  /** A redefinition being built beside the serving version; null: none. */
  rebuilding: {
    definition: Record<string, unknown>;
    version: number;
    partitions: Array<{ partition: number; processed: number; total: number }> | null;
  } | null;
}

export interface SearchHit {
  key: string;
  score: number;
  value: unknown;
  highlights?: Record<string, string>;
}

/** A facet of a search: the most frequent values with their counts, and min/max for numbers. */
export interface FacetCounts {
  values: Array<{ value: string | number | boolean; count: number }>;
  /** Distinct values left out of `values`. */
  omitted: number;
  min?: number;
  max?: number;
}

export interface SearchAnswer {
  hits: SearchHit[];
  total: number;
  totalRelation?: 'eq' | 'gte';
  facets?: Record<string, FacetCounts>;
}

export interface SearchRequest {
  q: string;
  filter?: string;
  sort?: string;
  facets?: string;
  limit?: number;
}

export interface DocAnswer {
  key: string;
  value: unknown;
  offset: number;
}

export interface SavedSettings {
  collection: string;
  settings: Record<string, unknown>;
  topicConfigs: Record<string, unknown>;
}

export interface ChangeEvent {
  collection: string;
  key: string;
  value: unknown;
  partition: number;
  offset: number;
  token: string;
}

/**
 * The line a view's feed sends when the version it follows is replaced (a redefinition swapped
 * in): the view's documents sent before it are replaced by the new version's, which follow.
 */
export interface ChangeReset {
  collection: string;
  reset: true;
  version: number;
  token: string;
}

export type ChangeLine = ChangeEvent | ChangeReset;

/** Whether a feed line is a view's reset, not a document's change (as the typed client's). */
export function isReset(line: ChangeLine): line is ChangeReset {
  return 'reset' in line && line.reset === true;
}

/** What the gateway answers for a failed call: its error code and message, and the status. */
export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const KEY_STORAGE = 'tailbase.apiKey';
const TOKEN_HEADER = 'tailbase-token';
let sessionToken: string | null = null;

export const apiKey = {
  get: (): string | null => sessionStorage.getItem(KEY_STORAGE),
  set: (key: string) => sessionStorage.setItem(KEY_STORAGE, key),
  clear: () => sessionStorage.removeItem(KEY_STORAGE),
};

type Query = Record<string, string | number | boolean | undefined>;

function url(path: string, query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== '') params.set(name, String(value));
  }
  const search = params.toString();
  return search === '' ? path : `${path}?${search}`;
}

function headers(extra: Record<string, string>, withToken: boolean): Headers {
  const all = new Headers(extra);
  const key = apiKey.get();
  if (key !== null) all.set('authorization', `Bearer ${key}`);
  if (withToken && sessionToken !== null) all.set(TOKEN_HEADER, sessionToken);
  return all;
}

async function failure(response: Response): Promise<ApiError> {
  const body = (await response.json().catch(() => null)) as {
    error?: { code?: string; message?: string };
  } | null;
  return new ApiError(
    response.status,
    body?.error?.code ?? `http_${response.status}`,
    body?.error?.message ?? response.statusText,
  );
}

async function call<T>(
  method: string,
  path: string,
  options: { query?: Query; body?: unknown } = {},
): Promise<T> {
  const response = await fetch(url(path, options.query), {
    method,
    headers: headers(
      options.body === undefined ? {} : { 'content-type': 'application/json' },
      true,
    ),
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  if (!response.ok) throw await failure(response);
  sessionToken = response.headers.get(TOKEN_HEADER) ?? sessionToken;
  return (await response.json()) as T;
}

const collectionPath = (collection: string) => `/v1/collections/${encodeURIComponent(collection)}`;

export const api = {
  status: () => call<ClusterStatus>('GET', '/v1/status'),

  collections: async () =>
    (await call<{ collections: CollectionSummary[] }>('GET', '/v1/collections')).collections,

  drop: (collection: string) => call<unknown>('DELETE', collectionPath(collection)),

  views: async () => (await call<{ views: ViewInfo[] }>('GET', '/v1/views')).views,

  serveNodeStatus: (node: number) => call<unknown>('GET', `/v1/admin/serve-nodes/${node}/status`),

  rebuild: (node: number) => call<unknown>('POST', `/v1/admin/serve-nodes/${node}/rebuild`),

  search: (collection: string, request: SearchRequest) =>
    call<SearchAnswer>('GET', `${collectionPath(collection)}/search`, {
      query: { ...request, highlight: true },
    }),

  get: (collection: string, key: string) =>
    call<DocAnswer>('GET', `${collectionPath(collection)}/docs/${encodeURIComponent(key)}`),

  settings: (collection: string) => call<unknown>('GET', `${collectionPath(collection)}/settings`),

  saveSettings: (collection: string, settings: unknown) =>
    call<SavedSettings>('PUT', `${collectionPath(collection)}/settings`, { body: settings }),

  /**
   * Follows the change feed from now (NDJSON) until `signal` aborts it: documents' changes, and
   * views' resets. No token is sent: the feed would take it as the position to resume from.
   */
  async changes(
    collection: string | undefined,
    signal: AbortSignal,
    onLine: (line: ChangeLine) => void,
  ): Promise<void> {
    const response = await fetch(url('/v1/changes', { from: 'now', collection }), {
      headers: headers({ accept: 'application/x-ndjson' }, false),
      signal,
    });
    if (!response.ok || response.body === null) throw await failure(response);
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let pending = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      pending += value;
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines.filter((text) => text.trim() !== '')) {
        const parsed = JSON.parse(line) as
          ChangeLine | { error: { code: string; message: string } };
        if ('error' in parsed) throw new ApiError(500, parsed.error.code, parsed.error.message);
        onLine(parsed);
      }
    }
  },
};
