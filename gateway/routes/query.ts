/** Range scans and search: fanned out to one replica per partition and merged. */
import type { Hono } from 'hono';
import { badRequest } from '../../shared/errors.js';
import { jsonText } from '../../shared/http-server.js';
import type { SearchResult } from '../../shared/serve-api.js';
import { API_ROUTES } from '../api/index.js';
import type { ScopeGuard } from '../auth.js';
import { planRead, readOn, TOKEN_HEADER } from '../consistency.js';
import { parseFieldParams } from '../../shared/filter-params.js';
import { setEdgeHeader } from '../edge-headers.js';
import { mergeFacets } from '../facets.js';
import { checkCursorVersion, decodePosition, encodePosition, mergeScanPages } from '../scan.js';
import { mergeSearchHits } from '../search.js';
import type { GatewayServices } from '../services.js';
import { intParam } from '../validation.js';
import { declaredRoutes } from './declared.js';
import { docTarget } from './docs.js';

export function queryRoutes(app: Hono, services: GatewayServices, guard: ScopeGuard) {
  const { limits } = services.config;
  const { servedTokens, topology } = services;
  const on = declaredRoutes(app, guard);
  const all = Array.from({ length: services.cluster.partitions }, (_, p) => p);

  const bounded = (query: Map<string, string>, name: string) => {
    const value = query.get(name);
    if (value !== undefined && Buffer.byteLength(value) > limits.keyBytesMax) {
      throw badRequest('invalid_parameter', `${name} is longer than keyBytesMax`, {
        parameter: name,
      });
    }
    return value === '' ? undefined : value;
  };

  on(API_ROUTES.scan, async (c) => {
    const { collection: name, query } = docTarget(c, services);
    const limit = intParam(query, 'limit', 1, limits.scanLimitMax, limits.scanLimitDefault);
    const cursor = query.get('cursor');
    const fieldParams = { filter: query.get('filter'), sort: query.get('sort') };
    const { sort } = parseFieldParams(fieldParams, limits);
    const position = cursor ? decodePosition(cursor, limits.keyBytesMax, sort.length) : undefined;
    const range = {
      prefix: bounded(query, 'prefix'),
      start: bounded(query, 'start'),
      end: bounded(query, 'end'),
      after: position?.key,
      afterSort: position?.sort,
      ...fieldParams,
    };
    const plan = await planRead(c, query, services, name, all);
    if (position !== undefined) checkCursorVersion(position, name, plan.version);
    const collection = plan.topic;
    const pages = await topology.fanOut(all, (node, assigned) =>
      readOn(plan, collection, node, assigned, (wait) =>
        node.client.scan(collection, {
          ...range,
          limit,
          // Only the partitions this node was assigned: a replica that also hosts others would
          // otherwise scan them too and bound the page by keys the merge throws away.
          partitions: assigned,
          ...wait,
        }),
      ),
    );
    const merged = mergeScanPages(pages, limit, sort);
    setEdgeHeader(c, TOKEN_HEADER, servedTokens.text(plan, collection, merged.applied, all));
    const items = merged.items.map(
      ({ key, json, offset, sort: values }) =>
        `{"key":${JSON.stringify(key)},"value":${json},"offset":${offset}` +
        (values ? `,"sort":${JSON.stringify(values)}}` : '}'),
    );
    const next = JSON.stringify(
      merged.after === null ? null : encodePosition(merged.after, plan.version),
    );
    return jsonText(c, `{"items":[${items.join(',')}],"cursor":${next}}`);
  });

  on(API_ROUTES.search, async (c) => {
    const { collection: name, query } = docTarget(c, services);
    const q = query.get('q') ?? '';
    if (q.trim() === '' || q.length > limits.queryCharsMax) {
      throw badRequest('invalid_query', `q must be 1..${limits.queryCharsMax} characters`);
    }
    const limit = intParam(query, 'limit', 1, limits.searchLimitMax, limits.searchLimitDefault);
    const offset = intParam(query, 'offset', 0, limits.searchOffsetMax, 0);
    const highlight = query.get('highlight') === 'true';
    const fieldParams = {
      filter: query.get('filter'),
      sort: query.get('sort'),
      facets: query.get('facets'),
    };
    const fields = parseFieldParams(fieldParams, limits);
    const plan = await planRead(c, query, services, name, all);
    const collection = plan.topic;
    const depth = offset + limit;
    const pageMax = services.config.serveSearchPageMax;
    // A node answers at most pageMax hits a call, so its top `depth` hits come in pages. Pages
    // may be read at different states: a document updated between them is kept once, and the
    // token covers the latest state read. (One that moved up into an earlier page is missed.)
    const pages = await topology.fanOut(all, async (node, assigned) => {
      const top: SearchResult = { hits: [], total: 0, totalExact: true, applied: {} };
      // Facets count every match, whatever the page: the first page's call asks for them.
      let facets = fieldParams.facets;
      const keys = new Set<string>();
      for (let from = 0; from < depth; from += pageMax) {
        const page = await readOn(plan, collection, node, assigned, (wait) =>
          node.client.search(collection, {
            q,
            limit: Math.min(pageMax, depth - from),
            offset: from,
            highlight,
            filter: fieldParams.filter,
            sort: fieldParams.sort,
            facets,
            // Its assigned partitions only, so `total` counts no partition twice across replicas.
            partitions: assigned,
            ...wait,
          }),
        );
        if (page.facets) top.facets = page.facets;
        facets = undefined;
        for (const hit of page.hits) {
          if (!keys.has(hit.key)) top.hits.push(hit);
          keys.add(hit.key);
        }
        top.total = page.total;
        top.totalExact = page.totalExact;
        for (const [p, applied] of Object.entries(page.applied)) {
          top.applied[p] = Math.max(top.applied[p] ?? applied, applied);
        }
        if (page.hits.length < Math.min(pageMax, depth - from)) break;
      }
      return top;
    });
    const merged = mergeSearchHits(pages, offset, limit, fields.sort);
    setEdgeHeader(c, TOKEN_HEADER, servedTokens.text(plan, collection, merged.applied, all));
    const hits = merged.hits.map(({ key, score, json, highlights, sort }) => {
      const marked = highlights ? `,"highlights":${JSON.stringify(highlights)}` : '';
      const sorted = sort ? `,"sort":${JSON.stringify(sort)}` : '';
      return `{"key":${JSON.stringify(key)},"score":${JSON.stringify(score)},"value":${json}${marked}${sorted}}`;
    });
    const facets =
      fields.facets.length === 0
        ? ''
        : `,"facets":${JSON.stringify(
            mergeFacets(
              fields.facets,
              pages.map((page) => page.result.facets),
              limits.facetValuesMax,
            ),
          )}`;
    // `totalRelation` as Elasticsearch's: "gte" when a node stopped counting at its bound.
    const relation = merged.totalExact ? 'eq' : 'gte';
    return jsonText(
      c,
      `{"hits":[${hits.join(',')}],"total":${merged.total},"totalRelation":"${relation}"${facets}}`,
    );
  });
}
