/** Writes and key reads: PUT / DELETE / GET one document, and the bulk POST. */
import type { Context, Hono } from 'hono';
import type { LogRecord } from '../../shared/batch-codec.js';
import { checkCollection } from '../../shared/collection-name.js';
import { partitionFor } from '../../shared/partitioner.js';
import { jsonText } from '../../shared/http-server.js';
import { API_ROUTES, type BulkAnswer, type WriteAnswer } from '../api/index.js';
import type { ScopeGuard } from '../auth.js';
import { planRead, readOn, requestToken, TOKEN_HEADER } from '../consistency.js';
import { parseBulkInSlices } from '../bulk.js';
import { setEdgeHeader } from '../edge-headers.js';
import { writeRecords, type GatewayServices } from '../services.js';
import { parseApplyWait, waitApplied } from '../wait-applied.js';
import { declaredRoutes } from './declared.js';
import {
  checkDocument,
  withoutBom,
  checkKey,
  decodeSegment,
  decodeUtf8,
  parseJson,
  rawPathSegments,
  readBody,
  strictQuery,
} from '../validation.js';

/** `/v1/collections/:c/docs[/:key]`, decoded strictly from the raw URL. */
export function docTarget(c: Context, services: GatewayServices) {
  const segments = rawPathSegments(c.req.url);
  const collection = checkCollection(decodeSegment(segments[3], 'collection'));
  const rawKey = segments[5];
  const key =
    rawKey === undefined
      ? undefined
      : checkKey(decodeSegment(rawKey, 'key'), services.config.limits.keyBytesMax);
  return { collection, key: key as string, query: strictQuery(c.req.url) };
}

export function docRoutes(app: Hono, services: GatewayServices, guard: ScopeGuard) {
  const { limits } = services.config;
  const { tokens, servedTokens } = services;
  const on = declaredRoutes(app, guard);

  /** Names, key and token are checked before the body is read, so a bad one costs no upload. */
  const writeOne = async (c: Context, readValue: () => Promise<Uint8Array | null>) => {
    const { collection, key, query } = docTarget(c, services);
    const sent = requestToken(c, query, services);
    const waitMs = parseApplyWait(query, services);
    await services.views.refuseWrite(collection);
    const value = await readValue();
    const record: LogRecord = { key, value, timestampMs: Date.now() };
    const { written, token } = await writeRecords(services, collection, [record], sent);
    const encoded = tokens.encode(token);
    setEdgeHeader(c, TOKEN_HEADER, encoded);
    if (waitMs !== undefined) {
      const offsets = new Map([[written[0].partition, written[0].offset]]);
      await waitApplied(services, { collection, offsets, token: encoded }, waitMs);
    }
    const answer: WriteAnswer = {
      key,
      partition: written[0].partition,
      offset: written[0].offset,
      token: encoded,
    };
    return c.json(answer);
  };

  on(API_ROUTES.putDocument, (c) =>
    writeOne(c, async () => {
      const body = await readBody(
        c,
        limits.documentBytesMax,
        'documentBytesMax',
        'document_too_large',
      );
      checkDocument(
        parseJson(decodeUtf8(body, 'document'), 'document'),
        'document',
        limits.documentDepthMax,
      );
      return withoutBom(body);
    }),
  );

  on(API_ROUTES.deleteDocument, (c) => writeOne(c, async () => null));

  on(API_ROUTES.getDocument, async (c) => {
    const { collection: name, key, query } = docTarget(c, services);
    const partition = partitionFor(key, services.cluster.partitions);
    const plan = await planRead(c, query, services, name, [partition]);
    const collection = plan.topic;
    const result = await services.topology.onReplica(partition, (node) =>
      readOn(plan, collection, node, [partition], (wait) => node.client.get(collection, key, wait)),
    );
    setEdgeHeader(
      c,
      TOKEN_HEADER,
      servedTokens.text(plan, collection, result.applied, [partition]),
    );
    if (result.doc === null) {
      const message = `no document ${key} in ${name}`;
      return c.json({ error: { code: 'document_not_found', message, collection: name, key } }, 404);
    }
    // The stored JSON text as written: a parse and re-serialisation would round big integers.
    return jsonText(
      c,
      `{"key":${JSON.stringify(key)},"value":${result.doc.json},"offset":${result.doc.offset}}`,
    );
  });

  on(API_ROUTES.bulk, async (c) => {
    const { collection, query } = docTarget(c, services);
    const sent = requestToken(c, query, services);
    const waitMs = parseApplyWait(query, services);
    await services.views.refuseWrite(collection);
    const body = await readBody(c, limits.bulkBytesMax, 'bulkBytesMax', 'bulk_too_large');
    const text = decodeUtf8(body, 'bulk body');
    const records = await parseBulkInSlices(text, c.req.header('content-type'), limits, Date.now());
    const { written, token } = await writeRecords(services, collection, records, sent);
    const encoded = tokens.encode(token);
    setEdgeHeader(c, TOKEN_HEADER, encoded);
    if (waitMs !== undefined) {
      const offsets = new Map<number, number>();
      for (const { partition, offset } of written) {
        offsets.set(partition, Math.max(offset, offsets.get(partition) ?? -1));
      }
      await waitApplied(services, { collection, offsets, token: encoded }, waitMs);
    }
    const answer: BulkAnswer = { count: records.length, token: encoded };
    return c.json(answer);
  });
}
