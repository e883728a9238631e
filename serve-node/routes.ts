/**
 * The serve-node's internal HTTP API (README.md): document reads, key-ordered scans, ranked
 * search, each optionally waiting for offsets; status, health, and the admin calls.
 */
import Database from 'better-sqlite3';
import { Hono, type Context } from 'hono';
import { checkCollection } from '../shared/collection-name.js';
import { badRequest, notFound, tooLarge } from '../shared/errors.js';
import { readBodyBytes } from '../shared/http-body.js';
import { installErrorHandlers, jsonText, requireClusterSecret } from '../shared/http-server.js';
import { integerParam } from '../shared/query-params.js';
import type { Logger } from '../shared/logger.js';
import type { AppliedOffsets, ServeStatus, SnapshotResult } from '../shared/serve-api.js';
import type { ServeNodeLimits } from './config.js';
import type { StoredDoc } from './doc-store.js';
import { parseQuery } from './fts-query.js';
import type { OffsetWaiters } from './offset-waiters.js';
import {
  checkKey,
  optionalString,
  parsePartitions,
  parseBatchGet,
  parseWaitFor,
} from './read-params.js';
import type { Replica } from './replica.js';

export interface ServeNodeCore {
  hosted: readonly number[];
  limits: ServeNodeLimits;
  clusterSecret?: string;
  waiters: OffsetWaiters;
  replica(): Replica;
  applied(): AppliedOffsets;
  status(): ServeStatus;
  ready(): boolean;
  rebuild(reason: string): Promise<void>;
  snapshot(dir: string): Promise<SnapshotResult>;
}

export function createServeNodeApp(core: ServeNodeCore, logger: Logger): Hono {
  const app = new Hono();
  installErrorHandlers(app, logger);
  const hostedSet = new Set(core.hosted);
  const { limits } = core;

  app.use('/internal/*', requireClusterSecret(core.clusterSecret));

  /** Waits until the read's `wait_for` offsets are applied, for at most its `wait_ms`. */
  const waitForOffsets = async (c: Context): Promise<void> => {
    const needs = parseWaitFor(c.req.query('wait_for'), hostedSet);
    // Longer waits than waitMsMax are clamped to it, not refused.
    const waitMs = Math.min(
      integerParam(
        c.req.query('wait_ms'),
        'wait_ms',
        0,
        Number.MAX_SAFE_INTEGER,
        limits.waitMsDefault,
      ),
      limits.waitMsMax,
    );
    if (needs.length > 0) await core.waiters.wait(needs, waitMs);
  };

  app.get('/healthz', (c) => c.json({ ok: true }));
  app.get('/readyz', (c) =>
    core.ready()
      ? c.json({ ready: true })
      : c.json({ error: { code: 'not_ready', message: 'partitions are still catching up' } }, 503),
  );
  app.get('/internal/status', (c) => c.json(core.status()));

  app.get('/internal/docs/:collection/:key{.+}', async (c) => {
    const collection = checkCollection(c.req.param('collection'));
    const key = checkKey(c.req.param('key'));
    await waitForOffsets(c);
    const doc = core.replica().docs.get(collection, key);
    const applied = core.applied();
    if (doc === undefined) {
      throw notFound('document_not_found', `no document ${collection}/${key}`, { applied });
    }
    return jsonText(c, `${docJson(doc).slice(0, -1)},"applied":${JSON.stringify(applied)}}`);
  });

  /**
   * Many key reads in one call (the gateway coalesces concurrent GETs): nothing waits here; an item
   * whose `waitFor` is not applied yet answers `false` and its caller retries it on the waiting route.
   */
  app.post('/internal/docs', async (c) => {
    const body = await readBodyBytes(c, limits.getBatchBytesMax, (actualBytes) =>
      tooLarge('batch_too_large', `a batched read is at most ${limits.getBatchBytesMax} bytes`, {
        limit: 'getBatchBytesMax',
        max: limits.getBatchBytesMax,
        ...(actualBytes === undefined ? {} : { actualBytes }),
      }),
    );
    const items = parseBatchGet(body, hostedSet, limits.getBatchKeysMax);
    const applied = core.applied();
    const answers = items.map(({ collection, key, needs }) => {
      if (needs.some((need) => applied[need.partition] <= need.offset)) return 'false';
      const doc = core.replica().docs.get(collection, key);
      return doc === undefined ? 'null' : docJson(doc);
    });
    return jsonText(c, `{"items":[${answers.join(',')}],"applied":${JSON.stringify(applied)}}`);
  });

  app.get('/internal/scan/:collection', async (c) => {
    const collection = checkCollection(c.req.param('collection'));
    const limit = integerParam(
      c.req.query('limit'),
      'limit',
      1,
      limits.scanLimitMax,
      limits.scanLimitDefault,
    );
    const range = {
      prefix: optionalString('prefix', c.req.query('prefix')),
      start: optionalString('start', c.req.query('start')),
      end: optionalString('end', c.req.query('end')),
      after: optionalString('after', c.req.query('after')),
    };
    const partitions = parsePartitions(c.req.query('partitions'), hostedSet);
    await waitForOffsets(c);
    const { items, more } = core
      .replica()
      .docs.scan(
        collection,
        range,
        limit,
        partitions ? new Set(partitions) : hostedSet,
        limits.scanBytesMax,
      );
    const applied = core.applied();
    return jsonText(
      c,
      `{"items":[${items.map(docJson).join(',')}],"applied":${JSON.stringify(applied)},"more":${more}}`,
    );
  });

  app.get('/internal/search/:collection', async (c) => {
    const collection = checkCollection(c.req.param('collection'));
    const q = c.req.query('q');
    if (q === undefined || q.trim() === '') throw badRequest('invalid_query', 'q is required');
    const query = parseQuery(q, limits);
    const limit = integerParam(
      c.req.query('limit'),
      'limit',
      1,
      limits.searchLimitMax,
      limits.searchLimitDefault,
    );
    const offset = integerParam(
      c.req.query('offset'),
      'offset',
      0,
      limits.searchDepthMax - limit,
      0,
    );
    const highlight = c.req.query('highlight') === 'true';
    const partitions = parsePartitions(c.req.query('partitions'), hostedSet) ?? core.hosted;
    await waitForOffsets(c);
    const replica = core.replica();
    let found;
    try {
      found = replica.search.search(collection, partitions, query, offset + limit);
    } catch (error) {
      // The parser emits only quoted strings, so this is a tokenizer corner case, not a bug to hide.
      if (error instanceof Database.SqliteError) {
        throw badRequest('invalid_query', `the query cannot be searched: ${error.message}`);
      }
      throw error;
    }
    const page = found.matches.slice(offset, offset + limit).flatMap((match) => {
      const doc = replica.docs.get(collection, match.key);
      return doc === undefined ? [] : [{ match, doc }];
    });
    const highlights: Array<Record<string, string>> = [];
    if (highlight) {
      for (const partition of new Set(page.map((hit) => hit.match.partition))) {
        const inPartition = page.filter((hit) => hit.match.partition === partition);
        const marked = replica.search.highlights(
          collection,
          partition,
          inPartition.map((hit) => ({ doc: JSON.parse(hit.doc.json) as unknown })),
          query,
        );
        inPartition.forEach((hit, i) => (highlights[page.indexOf(hit)] = marked[i]));
      }
    }
    // The documents' JSON goes out as stored: parsing and re-serialising it is most of a search.
    const hits = page.map(({ match, doc }, i) => {
      const extra = highlight ? `,"highlights":${JSON.stringify(highlights[i] ?? {})}` : '';
      return `${docJson(doc).slice(0, -1)},"score":${JSON.stringify(match.score)}${extra}}`;
    });
    const applied = JSON.stringify(core.applied());
    return jsonText(c, `{"hits":[${hits.join(',')}],"total":${found.total},"applied":${applied}}`);
  });

  app.post('/internal/admin/rebuild', (c) => {
    core.rebuild('admin_request').catch((error: unknown) => {
      logger.error({ err: error }, 'rebuild failed');
    });
    return c.json({ rebuilding: true }, 202);
  });

  app.post('/internal/admin/snapshot', async (c) => {
    const body = (await c.req.json().catch(() => null)) as { dir?: unknown } | null;
    if (typeof body?.dir !== 'string' || !body.dir.startsWith('/')) {
      throw badRequest('invalid_snapshot_dir', 'the body is {"dir": "/absolute/new/directory"}');
    }
    return c.json(await core.snapshot(body.dir));
  });

  return app;
}

/** A document with its JSON text as a string, so no reader's JSON.parse rounds its numbers. */
function docJson(doc: StoredDoc): string {
  return (
    `{"key":${JSON.stringify(doc.key)},"json":${JSON.stringify(doc.json)},` +
    `"offset":${doc.offset},"partition":${doc.partition}}`
  );
}
