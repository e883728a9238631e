/**
 * The serve-node's internal HTTP API (README.md): document reads, key-ordered scans, ranked
 * search, each optionally waiting for offsets; status, health, and the admin calls.
 */
import { Hono, type Context } from 'hono';
import { checkCollection } from '../shared/collection-name.js';
import { badRequest, notFound, tooLarge } from '../shared/errors.js';
import { readBodyBytes } from '../shared/http-body.js';
import { installErrorHandlers, jsonText, requireClusterSecret } from '../shared/http-server.js';
import { optionalInteger } from '../shared/query-params.js';
import type { Logger } from '../shared/logger.js';
import type {
  ScannedDocument,
  AppliedOffsets,
  ServedDocument,
  ServeStatus,
  SnapshotResult,
} from '../shared/serve-api.js';
import type { ServeNodeLimits } from './config.js';
import type { OffsetWaiters } from './offset-waiters.js';
import {
  checkKey,
  optionalString,
  parseSortValues,
  parsePartitions,
  parseBatchGet,
  parseSettingsWaitFor,
  parseWaitFor,
} from './read-params.js';
import { ServeReads, type ReadStores, type ReadWait } from './reads.js';

export interface ServeNodeCore {
  hosted: readonly number[];
  limits: ServeNodeLimits;
  clusterSecret?: string;
  waiters: OffsetWaiters;
  replica(): ReadStores;
  applied(collection: string): AppliedOffsets;
  tails(collection: string): boolean;
  /** Sync on the node itself; a promise where the node applies on another thread. */
  status(): ServeStatus | Promise<ServeStatus>;
  ready(): boolean | Promise<boolean>;
  rebuild(reason: string): Promise<void>;
  dropCollection(collection: string, reason: string): Promise<void>;
  snapshot(dir: string): Promise<SnapshotResult>;
  /** Where scans and searches run when not here: the node's read threads. */
  rangeReads?: RangeReads;
}

/** Scans and searches, as ServeReads answers them. */
export type RangeReads = Pick<ServeReads, 'scan' | 'search'>;

export function createServeNodeApp(core: ServeNodeCore, logger: Logger): Hono {
  const app = new Hono();
  installErrorHandlers(app, logger);
  const hostedSet = new Set(core.hosted);
  const { limits } = core;

  app.use('/internal/*', requireClusterSecret(core.clusterSecret));

  const reads = new ServeReads(core);
  const rangeReads = core.rangeReads ?? reads;
  /** The `wait_for` and `wait_ms` of a read route. */
  const readWait = (c: Context): ReadWait => ({
    needs: parseWaitFor(c.req.query('wait_for'), hostedSet),
    settingsNeed: parseSettingsWaitFor(c.req.query('settings_wait_for')),
    waitMs: optionalInteger(c.req.query('wait_ms')),
  });

  app.get('/healthz', (c) => c.json({ ok: true }));
  app.get('/readyz', async (c) =>
    (await core.ready())
      ? c.json({ ready: true })
      : c.json({ error: { code: 'not_ready', message: 'partitions are still catching up' } }, 503),
  );
  app.get('/internal/status', async (c) => c.json(await core.status()));

  app.get('/internal/docs/:collection/:key{.+}', async (c) => {
    const collection = checkCollection(c.req.param('collection'));
    const key = checkKey(c.req.param('key'));
    const { doc, applied } = await reads.get(collection, key, readWait(c));
    if (doc === undefined) {
      throw notFound('document_not_found', `no document ${collection}/${key}`, { applied });
    }
    return jsonText(c, `${docJson(doc).slice(0, -1)},"applied":${JSON.stringify(applied)}}`);
  });

  /**
   * Many key reads in one call (the gateway coalesces concurrent GETs): nothing waits here; an item
   * whose `waitFor` is not applied yet answers `false` and its caller retries it on the waiting route.
   * `applied` holds, for each collection the items name, its applied offsets.
   */
  app.post('/internal/docs', async (c) => {
    const body = await readBodyBytes(c, limits.getBatchBytesMax, (actualBytes) =>
      tooLarge('batch_too_large', `a batched read is at most ${limits.getBatchBytesMax} bytes`, {
        limit: 'getBatchBytesMax',
        max: limits.getBatchBytesMax,
        ...(actualBytes === undefined ? {} : { actualBytes }),
      }),
    );
    const { answers, applied } = reads.getMany(
      parseBatchGet(body, hostedSet, limits.getBatchKeysMax),
    );
    const items = answers.map((doc) =>
      doc === false ? 'false' : doc === null ? 'null' : docJson(doc),
    );
    return jsonText(c, `{"items":[${items.join(',')}],"applied":${JSON.stringify(applied)}}`);
  });

  app.get('/internal/count/:collection', (c) =>
    c.json({
      documents: reads.countDocuments(
        checkCollection(c.req.param('collection')),
        parsePartitions(c.req.query('partitions'), hostedSet),
      ),
    }),
  );

  app.get('/internal/store-bytes', (c) => c.json({ collections: reads.storeBytes() }));

  app.get('/internal/scan/:collection', async (c) => {
    const collection = checkCollection(c.req.param('collection'));
    const { items, more, applied } = await rangeReads.scan(collection, {
      limit: optionalInteger(c.req.query('limit')),
      range: {
        prefix: optionalString('prefix', c.req.query('prefix')),
        start: optionalString('start', c.req.query('start')),
        end: optionalString('end', c.req.query('end')),
        after: optionalString('after', c.req.query('after')),
      },
      afterSort: parseSortValues(c.req.query('after_sort')),
      filter: c.req.query('filter'),
      sort: c.req.query('sort'),
      partitions: parsePartitions(c.req.query('partitions'), hostedSet),
      ...readWait(c),
    });
    return jsonText(
      c,
      `{"items":[${items.map(scannedJson).join(',')}],"applied":${JSON.stringify(applied)},"more":${more}}`,
    );
  });

  app.get('/internal/search/:collection', async (c) => {
    const collection = checkCollection(c.req.param('collection'));
    const { hits, total, totalExact, applied, facets } = await rangeReads.search(collection, {
      q: c.req.query('q'),
      filter: c.req.query('filter'),
      sort: c.req.query('sort'),
      facets: c.req.query('facets'),
      limit: optionalInteger(c.req.query('limit')),
      offset: optionalInteger(c.req.query('offset')),
      highlight: c.req.query('highlight') === 'true',
      partitions: parsePartitions(c.req.query('partitions'), hostedSet),
      ...readWait(c),
    });
    // The documents' JSON goes out as stored: parsing and re-serialising it is most of a search.
    const items = hits.map((hit) => {
      const marked = hit.highlights ? `,"highlights":${JSON.stringify(hit.highlights)}` : '';
      const extra = marked + (hit.sort ? `,"sort":${JSON.stringify(hit.sort)}` : '');
      return `${docJson(hit).slice(0, -1)},"score":${JSON.stringify(hit.score)}${extra}}`;
    });
    return jsonText(
      c,
      `{"hits":[${items.join(',')}],"total":${total},"totalExact":${totalExact},` +
        `"applied":${JSON.stringify(applied)}` +
        (facets ? `,"facets":${JSON.stringify(facets)}}` : '}'),
    );
  });

  app.post('/internal/admin/rebuild', (c) => {
    core.rebuild('admin_request').catch((error: unknown) => {
      logger.error({ err: error }, 'rebuild failed');
    });
    return c.json({ rebuilding: true }, 202);
  });

  app.post('/internal/admin/drop', async (c) => {
    const body = (await c.req.json().catch(() => null)) as { collection?: unknown } | null;
    if (typeof body?.collection !== 'string') {
      throw badRequest('invalid_drop', 'the body is {"collection": "name"}');
    }
    await core.dropCollection(checkCollection(body.collection), 'admin_request');
    return c.json({ dropped: true });
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

function scannedJson(doc: ScannedDocument): string {
  return doc.sort
    ? `${docJson(doc).slice(0, -1)},"sort":${JSON.stringify(doc.sort)}}`
    : docJson(doc);
}

/** A document with its JSON text as a string, so no reader's JSON.parse rounds its numbers. */
function docJson(doc: ServedDocument): string {
  return (
    `{"key":${JSON.stringify(doc.key)},"json":${JSON.stringify(doc.json)},` +
    `"offset":${doc.offset},"partition":${doc.partition}}`
  );
}
