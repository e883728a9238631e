/** Collection settings, the change feed, status, health, readiness and metrics. */
import type { Context, Hono } from 'hono';
import { notFound } from '../../shared/errors.js';
import {
  API_ROUTES,
  openApiDocument,
  type Readiness,
  type RebuildAnswer,
  type SettingsAnswer,
  type SettingsView,
} from '../api/index.js';
import type { ScopeGuard } from '../auth.js';
import { changeFeed } from '../changes.js';
import { requestToken, TOKEN_HEADER } from '../consistency.js';
import { writeRecords, type GatewayServices } from '../services.js';
import { SETTINGS_TOPIC } from '../../shared/topics.js';
import { gatewayMemoryBounds } from '../memory-bounds.js';
import { clusterStatus } from '../status.js';
import { viewRows } from '../view-status.js';
import { parseApplyWait, waitApplied } from '../wait-applied.js';
import { parseSettings, parseSettingsPatch, type SettingsRequest } from '../settings.js';
import { readCollectionSettings, readSearchSettings } from '../settings-reader.js';
import { configureSettingsTopics, settingsTarget } from '../settings-topics.js';
import { decodeUtf8, parseJson, readBody, strictQuery } from '../validation.js';
import { declaredRoutes } from './declared.js';
import { docTarget } from './docs.js';
import { settingsTopics } from '../../shared/view-catalog.js';

export function opsRoutes(app: Hono, services: GatewayServices, guard: ScopeGuard) {
  const { config, cluster, log, tokens, topology, metrics } = services;
  const on = declaredRoutes(app, guard);
  const openApi = JSON.stringify(openApiDocument());

  /** PUT and PATCH: the body parsed against the stored settings, then written as PUT writes. */
  const writeSettings = async (
    c: Context,
    parse: (body: unknown, collection: string) => Promise<SettingsRequest>,
  ) => {
    const { collection: name, query } = docTarget(c, services);
    const sent = requestToken(c, query, services);
    const waitMs = parseApplyWait(query, services);
    const target = settingsTarget(await services.views.current(), name);
    const [collection] = target.topics;
    const body = await readBody(
      c,
      config.limits.settingsBytesMax,
      'settingsBytesMax',
      'settings_too_large',
    );
    const { settings, topicConfigs } = await parse(
      parseJson(decodeUtf8(body, 'settings'), 'settings'),
      collection,
    );
    const served = await configureSettingsTopics(log, target, topicConfigs, () =>
      services.views.current(),
    );
    const records = target.topics.map((key) => ({
      key,
      value: Buffer.from(JSON.stringify(settings)),
      timestampMs: Date.now(),
    }));
    const { written, token } = await writeRecords(services, SETTINGS_TOPIC, records, sent, () => 0);
    const encoded = tokens.encode(token);
    c.header(TOKEN_HEADER, encoded);
    if (waitMs !== undefined) {
      const target = { collection, offsets: new Map(), token: encoded };
      await waitApplied(services, { ...target, settingsOffset: written.at(-1)!.offset }, waitMs);
    }
    const answer: SettingsAnswer = {
      collection: name,
      settings,
      topicConfigs: served.configs,
      token: encoded,
    };
    return c.json(answer);
  };

  on(API_ROUTES.putSettings, (c) => writeSettings(c, async (body) => parseSettings(body)));

  // Two PATCHes at once may each merge into the settings before the other's: the later record
  // wins whole, as two PUTs would.
  on(API_ROUTES.patchSettings, (c) =>
    writeSettings(c, async (body, collection) =>
      parseSettingsPatch(body, await readSearchSettings(log, collection, config.feedReadBytesMax)),
    ),
  );

  on(API_ROUTES.getSettings, async (c) => {
    const { collection } = docTarget(c, services);
    const [topic] = settingsTopics(await services.views.current(), collection);
    const view: SettingsView = await readCollectionSettings(log, topic, config.feedReadBytesMax);
    return c.json({ ...view, collection });
  });

  on(API_ROUTES.changes, (c) => changeFeed(c, strictQuery(c.req.url), services));

  on(API_ROUTES.status, async (c) => {
    const [offsets, views] = await Promise.all([
      log.offsets(),
      services.views.current(),
      topology.refresh(),
    ]);
    const rows = viewRows(views, services.viewProcessing);
    return c.json(
      clusterStatus(cluster.clusterId, offsets, topology, gatewayMemoryBounds(services), rows),
    );
  });

  /** A serve-node by its index in /v1/status: operators rebuild one without knowing its address. */
  const serveNode = (param: string) => {
    const node = /^\d+$/.test(param) ? topology.nodes[Number(param)] : undefined;
    if (node === undefined) {
      throw notFound('serve_node_not_found', `no serve-node ${param}`, {
        serveNodes: topology.nodes.length,
      });
    }
    return node;
  };

  on(API_ROUTES.serveNodeStatus, async (c) =>
    c.json(await serveNode(c.req.param('node') ?? '').client.status()),
  );

  on(API_ROUTES.rebuild, async (c) => {
    const node = serveNode(c.req.param('node') ?? '');
    await node.client.rebuild();
    const answer: RebuildAnswer = { node: node.index, rebuilding: true };
    return c.json(answer, 202);
  });

  on(API_ROUTES.openapi, (c) => c.body(openApi, 200, { 'content-type': 'application/json' }));

  on(API_ROUTES.health, (c) => c.json({ ok: true }));

  on(API_ROUTES.ready, async (c) => {
    const uncovered: number[] = [];
    for (let p = 0; p < cluster.partitions; p++) {
      if (!topology.nodes.some((node) => node.hosted.has(p) && topology.isUp(node))) {
        uncovered.push(p);
      }
    }
    const logUp = await log.offsets().then(
      () => true,
      () => false,
    );
    const ready = logUp && uncovered.length === 0;
    const answer: Readiness = { ready, log: logUp, uncoveredPartitions: uncovered };
    return c.json(answer, ready ? 200 : 503);
  });

  on(API_ROUTES.metrics, async (c) => {
    c.header('content-type', metrics.registry.contentType);
    return c.body(await metrics.registry.metrics());
  });
}
