/**
 * The collections themselves: GET /v1/collections lists them (from the log's topics, with the
 * documents the serve-nodes hold, their bytes on disk and the settings version), DELETE
 * /v1/collections/:c drops one.
 *
 * A drop deletes the collection's topic, writes a null settings record for it (a collection
 * created again under the name starts with the default settings) and has every serve-node drop it
 * from its stores in place (serve-node-drops.ts): its documents, tables and checkpoints go, the
 * other collections are applied and read throughout. The answer comes once each serve-node has
 * marked it dropping and dropped its tables and checkpoints, so that no read answers from it; the
 * documents are deleted after, in the background (the node's status lists it in `dropping`).
 */
import type { Hono } from 'hono';
import { notFound, TailbaseError } from '../../shared/errors.js';
import { isCollectionTopic, SETTINGS_TOPIC } from '../../shared/topics.js';
import { collectionBytes } from '../collection-bytes.js';
import { API_ROUTES, type CollectionList, type DropAnswer } from '../api/index.js';
import type { ScopeGuard } from '../auth.js';
import { writeRecords, type GatewayServices } from '../services.js';
import { readSettingsVersions } from '../settings-reader.js';
import { dropFromServeNodes } from '../serve-node-drops.js';
import { strictQuery } from '../validation.js';
import { declaredRoutes } from './declared.js';
import { docTarget } from './docs.js';
import { servedName, viewOfTopic } from '../../shared/view-catalog.js';

export function collectionRoutes(app: Hono, services: GatewayServices, guard: ScopeGuard) {
  const { config, log, topology, incarnations } = services;
  const on = declaredRoutes(app, guard);
  const all = Array.from({ length: services.cluster.partitions }, (_, p) => p);

  on(API_ROUTES.listCollections, async (c) => {
    strictQuery(c.req.url);
    const [topics, offsets, versions, views] = await Promise.all([
      log.topics(),
      log.offsets(),
      readSettingsVersions(log, config.feedReadBytesMax),
      services.views.current(),
    ]);
    incarnations.update(topics);
    const collections = topics.filter((topic) => isCollectionTopic(topic.name));
    const [bytes, counts] = await Promise.all([
      collectionBytes(
        log,
        topology.nodes.map((node) => node.client),
        collections,
        services.logger,
      ),
      Promise.all(
        collections.map(({ name }) =>
          topology
            .fanOut(all, (node, assigned) => node.client.countDocuments(name, assigned))
            .then(
              (answers) => answers.reduce((sum, { result }) => sum + result, 0),
              () => null,
            ),
        ),
      ),
    ]);
    const answer: CollectionList = {
      collections: collections.map((topic, i) => ({
        // A view is listed by its name, whichever version's topic serves it.
        collection: servedName(views, topic.name),
        incarnation: topic.incarnation ?? 0,
        partitions: topic.partitions,
        records: offsets
          .filter((o) => o.topic === topic.name)
          .reduce((sum, o) => sum + (o.endOffset - o.logStartOffset), 0),
        documents: counts[i],
        settingsVersion: versions.get(topic.name) ?? null,
        bytes: bytes[i],
        topicConfigs: topic.configs,
        view: viewOfTopic(views, topic.name) !== null,
      })),
    };
    return c.json(answer);
  });

  on(API_ROUTES.dropCollection, async (c) => {
    const { collection } = docTarget(c, services);
    await services.views.refuseWrite(collection);
    // Its views' frontiers are offsets of this incarnation: a new one would start below them.
    const dependents = [...(await services.views.current())]
      .filter(([, declared]) => declared.view.from === collection)
      .map(([name]) => name);
    if (dependents.length > 0) {
      throw new TailbaseError(
        409,
        'collection_has_views',
        `views ${dependents.join(', ')} derive from ${collection}: drop them first (DELETE /v1/views/:v)`,
        { collection, views: dependents },
      );
    }
    const incarnation = await incarnations.of(collection);
    if (incarnation === undefined) {
      throw notFound('collection_not_found', `no collection ${collection}`, { collection });
    }
    await log.deleteTopic(collection);
    await incarnations.refresh();
    const reset = { key: collection, value: null, timestampMs: Date.now() };
    await writeRecords(services, SETTINGS_TOPIC, [reset], new Map(), () => 0);
    await dropFromServeNodes(config, topology.nodes, [collection]);
    const answer: DropAnswer = {
      collection,
      dropped: true,
      incarnation,
      serveNodes: topology.nodes.map((node) => node.index),
    };
    return c.json(answer);
  });
}
