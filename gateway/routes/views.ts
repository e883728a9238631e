/**
 * Views: PUT /v1/views/:v declares one (the view's own topic, then a record in the views topic,
 * so it is listed and readable as a collection at once; a declaration never names a missing topic) or redefines one (a rebuild record: the
 * new version is built into a topic of its own beside the old, and the processor swaps it in once
 * caught up), GET lists or inspects them, DELETE drops one (null records, then its topics and
 * every serve-node's tables, as a collection drop).
 * Definitions are checked in shared/view-definition.ts; what needs the other views and the log's
 * topics (the name free, the source existing, no cycle) is checked here.
 */
import type { Context, Hono } from 'hono';
import { checkCollection } from '../../shared/collection-name.js';
import { badRequest, notFound, TailbaseError } from '../../shared/errors.js';
import {
  COLLECTION_PATTERN,
  isCollectionTopic,
  SETTINGS_TOPIC,
  VIEWS_TOPIC,
} from '../../shared/topics.js';
import { readSearchSettings, settingsDeclared } from '../settings-reader.js';
import {
  definitionOf,
  parseViewDefinition,
  type ViewDefinition,
} from '../../shared/view-definition.js';
import { API_ROUTES, type ViewDropAnswer, type ViewInfo, type ViewList } from '../api/index.js';
import type { ScopeGuard } from '../auth.js';
import { dropFromServeNodes } from '../serve-node-drops.js';
import { writeRecords, type GatewayServices } from '../services.js';
import {
  decodeSegment,
  decodeUtf8,
  parseJson,
  rawPathSegments,
  readBody,
  strictQuery,
} from '../validation.js';
import {
  type CatalogView,
  REBUILD_KEY_SUFFIX,
  type RebuildRecord,
  sourceChain,
  topicOf,
} from '../../shared/view-catalog.js';
import type { ViewProgress } from '../../shared/view-api.js';
import type { LogRecord } from '../../shared/batch-codec.js';
import { declaredRoutes } from './declared.js';
import { topicOffsets } from '../../shared/topic-offsets.js';

const VIEWS_PARTITION = 0;
const encoder = new TextEncoder();
/** Random names tried for a new version's topic: 36^8 of them, so one almost always does. */
const VERSION_TOPIC_ATTEMPTS_MAX = 16;

/** `/v1/views/:v`, decoded strictly from the raw URL. */
function viewName(c: Context): string {
  strictQuery(c.req.url);
  return checkCollection(decodeSegment(rawPathSegments(c.req.url)[3], 'view'));
}

export function viewRoutes(app: Hono, services: GatewayServices, guard: ScopeGuard) {
  const { config, log, topology, views } = services;
  const on = declaredRoutes(app, guard);

  /** The processor's progress of a version of the view; null where none runs it here. */
  const progressOf = (name: string, version: number): ViewProgress | null =>
    services.viewProcessing?.progress(name, version) ?? null;

  const info = (
    all: ReadonlyMap<string, CatalogView>,
    name: string,
    declared: CatalogView,
  ): ViewInfo => {
    const chain = sourceChain(all, declared.view.from);
    const progress = progressOf(name, declared.version);
    const { rebuild } = declared;
    const rebuilt = rebuild === null ? null : progressOf(name, rebuild.version);
    return {
      view: name,
      definition: declared.definition,
      version: declared.version,
      topic: declared.topic,
      rebuilding:
        rebuild === null
          ? null
          : {
              definition: rebuild.definition,
              version: rebuild.version,
              topic: rebuild.topic,
              partitions:
                rebuilt?.frontiers.map(({ partition, processed, coversFrom }) => ({
                  partition,
                  processed,
                  total: rebuild.targets[String(partition)] ?? 0,
                  ...(coversFrom === undefined ? {} : { coversFrom }),
                })) ?? null,
            },
      source: chain[chain.length - 1],
      frontiers: progress?.frontiers.map(({ processed: _, ...frontier }) => frontier) ?? null,
      refusedRecords: progress?.refusedRecords ?? null,
      lateRecords: progress?.lateRecords ?? null,
    };
  };

  /** Definition records, never while the processors decide a swap (ViewProcessing.exclusive). */
  const appendViews = async (records: LogRecord[]) => {
    const append = () =>
      writeRecords(services, VIEWS_TOPIC, records, new Map(), () => VIEWS_PARTITION);
    const processing = services.viewProcessing;
    return (processing === null ? await append() : await processing.exclusive(append)).written;
  };

  /** A redefinition: a rebuild record naming the new version's topic and the source's end now. */
  const redefine = async (
    c: Context,
    name: string,
    all: ReadonlyMap<string, CatalogView>,
    existing: CatalogView,
    definition: ViewDefinition,
  ) => {
    const dependents = dependentsOf(all, name);
    if (dependents.length > 0) {
      throw new TailbaseError(
        409,
        'view_has_dependents',
        `views ${dependents.join(', ')} derive from ${name}: drop them before redefining it`,
        { view: name, dependents },
      );
    }
    const [topics, offsets, settings] = await Promise.all([
      log.topics(),
      log.offsets(),
      readSearchSettings(log, existing.topic, config.feedReadBytesMax),
    ]);
    const sourceTopic = topicOf(all, definition.from);
    const targets: Record<string, number> = {};
    for (const o of offsets)
      if (o.topic === sourceTopic) targets[String(o.partition)] = o.endOffset;
    const taken = new Set([...topics.map((t) => t.name), ...all.keys()]);
    const record: RebuildRecord = {
      definition,
      topic: versionTopic(name, taken),
      targets,
      retired: existing.rebuild === null ? [] : [existing.rebuild.topic],
    };
    // The new version is read as the old one is: its topic's configs and settings first.
    await log.ensureTopic(record.topic, topics.find((t) => t.name === existing.topic)?.configs);
    const copied = { key: record.topic, value: encoder.encode(JSON.stringify(settings)) };
    await writeRecords(
      services,
      SETTINGS_TOPIC,
      [{ ...copied, timestampMs: Date.now() }],
      new Map(),
      () => 0,
    );
    const written = await appendViews([
      {
        key: name + REBUILD_KEY_SUFFIX,
        value: encoder.encode(JSON.stringify(record)),
        timestampMs: Date.now(),
      },
    ]);
    await services.viewProcessing?.settle();
    const after = await views.current();
    const declared = after.get(name);
    // A PUT that raced this one appended after it: its definition is the one built.
    if (declared?.rebuild?.version !== written[0].offset) throw viewExists(name);
    return c.json(info(after, name, declared));
  };

  /**
   * Whether `name`'s topic, declared by no view, is one a first PUT of a view left before its
   * declaration (its gateway died between the two): empty, and no collection's settings name it.
   * Any other is a collection's.
   */
  const leftByFirstPut = async (name: string): Promise<boolean> => {
    // Every partition's end: one without a leader is not an empty one (503, not taken over).
    const partitions = Array.from({ length: services.cluster.partitions }, (_, p) => p);
    const [offsets, declared] = await Promise.all([
      topicOffsets(log, name, partitions),
      settingsDeclared(log, name, config.feedReadBytesMax),
    ]);
    return !declared && [...offsets.values()].every((o) => o.endOffset === 0);
  };

  on(API_ROUTES.putView, async (c) => {
    const name = viewName(c);
    const body = await readBody(c, config.limits.viewBytesMax, 'viewBytesMax', 'view_too_large');
    const sent = parseJson(decodeUtf8(body, 'view definition'), 'view definition');
    const parsed = parseViewDefinition(name, sent);
    checkCollection(parsed.from);
    const filterText = (sent as { filter?: string }).filter;
    const definition = definitionOf(parsed, filterText);
    const [all, topics] = await Promise.all([views.current(), log.topics()]);
    const existing = all.get(name);
    const same = (other: { definition: ViewDefinition }) =>
      JSON.stringify(other.definition) === JSON.stringify(definition);
    if (existing !== undefined && same(existing)) {
      if (existing.rebuild === null) return c.json(info(all, name, existing));
      // Back to the definition that serves: the rebuild is abandoned.
      await appendViews([{ key: name + REBUILD_KEY_SUFFIX, value: null, timestampMs: Date.now() }]);
      await services.viewProcessing?.settle();
      const after = await views.current();
      return c.json(info(after, name, declaredOrThrow(after, name)));
    }
    if (existing?.rebuild != null && same(existing.rebuild)) {
      return c.json(info(all, name, existing));
    }
    if (
      existing === undefined &&
      topics.some((topic) => topic.name === name) &&
      !(await leftByFirstPut(name))
    ) {
      throw badRequest(
        'view_name_taken',
        `${name} is a collection: a view needs a name of its own`,
        {
          view: name,
        },
      );
    }
    checkSource(all, topics, name, parsed.from);
    if (existing !== undefined) return redefine(c, name, all, existing, definition);
    const record = {
      key: name,
      value: encoder.encode(JSON.stringify(definition)),
      timestampMs: Date.now(),
    };
    // The topic first: a gateway that dies between the two leaves an empty topic, which a PUT
    // again takes (leftByFirstPut), never a declared view without its topic.
    await log.ensureTopic(name);
    const written = await appendViews([record]);
    await services.viewProcessing?.settle();
    const after = await views.current();
    const declared = after.get(name);
    // A PUT that raced this one appended first: its definition holds.
    if (declared === undefined || declared.version !== written[0].offset) throw viewExists(name);
    return c.json(info(after, name, declared));
  });

  on(API_ROUTES.listViews, async (c) => {
    strictQuery(c.req.url);
    const all = await views.current();
    const answer: ViewList = {
      views: [...all].map(([name, declared]) => info(all, name, declared)),
    };
    return c.json(answer);
  });

  on(API_ROUTES.getView, async (c) => {
    const name = viewName(c);
    const all = await views.current();
    return c.json(info(all, name, declaredOrThrow(all, name)));
  });

  on(API_ROUTES.dropView, async (c) => {
    const name = viewName(c);
    const all = await views.current();
    const dependents = dependentsOf(all, name);
    if (dependents.length > 0) {
      throw new TailbaseError(
        409,
        'view_has_dependents',
        `views ${dependents.join(', ')} derive from ${name}: drop them first`,
        { view: name, dependents },
      );
    }
    const declared = declaredOrThrow(all, name);
    // One batch: the rebuild and the view go together.
    await appendViews([
      { key: name + REBUILD_KEY_SUFFIX, value: null, timestampMs: Date.now() },
      { key: name, value: null, timestampMs: Date.now() },
    ]);
    // Its processors stop before the topics go, or an append of theirs would create one again.
    await services.viewProcessing?.settle();
    const owned = new Set([name, declared.topic, ...declared.retired]);
    if (declared.rebuild !== null) owned.add(declared.rebuild.topic);
    const present = (await log.topics()).filter(
      (topic) => owned.has(topic.name) && isCollectionTopic(topic.name),
    );
    for (const topic of present) await log.deleteTopic(topic.name);
    if (present.length > 0) await services.incarnations.refresh();
    // Those already gone too: a node that has not seen them go still holds them.
    const topics = [...owned].filter((topic) => isCollectionTopic(topic));
    await dropFromServeNodes(config, topology.nodes, topics);
    const answer: ViewDropAnswer = { view: name, dropped: true };
    return c.json(answer);
  });
}

/**
 * The source exists (a collection's topic, or a view), is no view being rebuilt (its topic would
 * change under this one), and does not lead back to the view.
 */
function checkSource(
  all: ReadonlyMap<string, CatalogView>,
  topics: readonly { name: string }[],
  name: string,
  from: string,
): void {
  const source = all.get(from);
  if (source === undefined && !topics.some((topic) => topic.name === from)) {
    throw notFound('source_not_found', `no collection or view ${from} to derive from`, { from });
  }
  if (source?.rebuild != null) {
    throw new TailbaseError(
      409,
      'view_rebuilding',
      `view ${from} is being rebuilt: declare views of it once its new version serves`,
      { view: name, from },
    );
  }
  if (sourceChain(all, from).includes(name)) {
    throw badRequest('view_cycle', `${name} would derive from itself through ${from}`, {
      view: name,
    });
  }
}

function dependentsOf(all: ReadonlyMap<string, CatalogView>, name: string): string[] {
  return [...all]
    .filter(([, other]) => other.view.from === name || other.rebuild?.view.from === name)
    .map(([n]) => n);
}

/**
 * A topic for a redefinition's version: the view's name (cut to fit) and a random suffix, free
 * among the log's topics and the views; a collection name, so every node serves it as one.
 */
function versionTopic(name: string, taken: ReadonlySet<string>): string {
  for (let attempt = 0; attempt < VERSION_TOPIC_ATTEMPTS_MAX; attempt++) {
    const suffix = `--${Math.random().toString(36).slice(2, 10).padEnd(8, '0')}`;
    const topic = name.slice(0, 64 - suffix.length) + suffix;
    if (!taken.has(topic) && COLLECTION_PATTERN.test(topic)) return topic;
  }
  throw new TailbaseError(
    409,
    'view_exists',
    `no free topic name for a new version of ${name} in ${VERSION_TOPIC_ATTEMPTS_MAX} tries`,
    { view: name },
  );
}

function declaredOrThrow(all: ReadonlyMap<string, CatalogView>, name: string): CatalogView {
  const declared = all.get(name);
  if (declared === undefined) throw notFound('view_not_found', `no view ${name}`, { view: name });
  return declared;
}

function viewExists(name: string): TailbaseError {
  return new TailbaseError(
    409,
    'view_exists',
    `another definition of view ${name} was declared at the same moment and holds: read it (GET /v1/views/${name}) and send yours again`,
    { view: name },
  );
}
