/** Collection settings, the change feed, status, health, readiness and metrics. */
import type { Hono } from 'hono';
import { notFound } from '../../shared/errors.js';
import type { ScopeGuard } from '../auth.js';
import { changeFeed } from '../changes.js';
import { requestToken, TOKEN_HEADER } from '../consistency.js';
import { writeRecords, type GatewayServices } from '../services.js';
import { SETTINGS_TOPIC, isCollectionTopic } from '../../shared/topics.js';
import { parseSettings } from '../settings.js';
import { decodeUtf8, parseJson, readBody, strictQuery } from '../validation.js';
import { docTarget } from './docs.js';

export function opsRoutes(app: Hono, services: GatewayServices, guard: ScopeGuard) {
  const { config, cluster, log, tokens, topology, metrics } = services;

  app.put('/v1/collections/:c/settings', guard('admin'), async (c) => {
    const { collection, query } = docTarget(c, services);
    const sent = requestToken(c, query, services);
    const body = await readBody(
      c,
      config.limits.settingsBytesMax,
      'settingsBytesMax',
      'settings_too_large',
    );
    const { settings, topicConfigs } = parseSettings(
      parseJson(decodeUtf8(body, 'settings'), 'settings'),
    );
    // The topic first: configs the log refuses leave the settings unwritten.
    const topic = await log.ensureTopic(collection, topicConfigs);
    const record = {
      key: collection,
      value: Buffer.from(JSON.stringify(settings)),
      timestampMs: Date.now(),
    };
    const { token } = await writeRecords(services, SETTINGS_TOPIC, [record], sent, () => 0);
    const encoded = tokens.encode(token);
    c.header(TOKEN_HEADER, encoded);
    return c.json({ collection, settings, topicConfigs: topic.configs, token: encoded });
  });

  app.get('/v1/changes', guard('read'), (c) => changeFeed(c, strictQuery(c.req.url), services));

  app.get('/v1/status', guard('read'), async (c) => {
    const [offsets] = await Promise.all([log.offsets(), topology.refresh()]);
    const ordered = [...offsets].sort(
      (a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition,
    );
    return c.json({
      clusterId: cluster.clusterId,
      partitions: ordered.map(({ topic, partition, logStartOffset, endOffset }) => ({
        topic,
        partition,
        logStartOffset,
        endOffset,
        replicas: topology.nodes
          .map((node) => ({
            node,
            status: node.status?.partitions.find(
              (s) => s.topic === topic && s.partition === partition,
            ),
          }))
          // A collection's partition is on the nodes hosting its number, tailing it yet or not;
          // an internal topic's on the nodes that tail it.
          .filter(({ node, status }) =>
            isCollectionTopic(topic) ? node.hosted.has(partition) : status !== undefined,
          )
          .map(({ node, status }) => ({
            node: node.index,
            up: topology.isUp(node),
            applied: status?.applied ?? null,
            lag: status === undefined ? null : Math.max(0, endOffset - status.applied),
            state: status?.state ?? null,
          })),
      })),
      serveNodes: topology.nodes.map((node) => ({
        node: node.index,
        nodeId: node.status?.nodeId ?? null,
        up: topology.isUp(node),
        ready: node.status?.ready ?? false,
        partitions: [...node.hosted].sort((a, b) => a - b),
        limitConflicts: node.limitConflicts,
      })),
    });
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

  app.get('/v1/admin/serve-nodes/:node/status', guard('admin'), async (c) =>
    c.json(await serveNode(c.req.param('node')).client.status()),
  );

  app.post('/v1/admin/serve-nodes/:node/rebuild', guard('admin'), async (c) => {
    const node = serveNode(c.req.param('node'));
    await node.client.rebuild();
    return c.json({ node: node.index, rebuilding: true }, 202);
  });

  app.get('/healthz', (c) => c.json({ ok: true }));

  app.get('/readyz', async (c) => {
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
    return c.json({ ready, log: logUp, uncoveredPartitions: uncovered }, ready ? 200 : 503);
  });

  app.get('/metrics', guard('read'), async (c) => {
    c.header('content-type', metrics.registry.contentType);
    return c.body(await metrics.registry.metrics());
  });
}
