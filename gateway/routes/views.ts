/**
 * Views: PUT /v1/views/:v declares one (a record in the views topic, then the view's own topic,
 * so it is listed and readable as a collection at once), GET lists or inspects them, DELETE drops
 * one (a null record, then its topic and every serve-node's tables, as a collection drop).
 * Definitions are checked in shared/view-definition.ts; what needs the other views and the log's
 * topics (the name free, the source existing, no cycle) is checked here.
 */
import type { Context, Hono } from 'hono';
import { checkCollection } from '../../shared/collection-name.js';
import { badRequest, notFound, TailbaseError } from '../../shared/errors.js';
import { isCollectionTopic, VIEWS_TOPIC } from '../../shared/topics.js';
import { definitionOf, parseViewDefinition } from '../../shared/view-definition.js';
import { API_ROUTES, type ViewDropAnswer, type ViewInfo, type ViewList } from '../api/index.js';
import type { ScopeGuard } from '../auth.js';
import { replaceStores } from '../replace-stores.js';
import { writeRecords, type GatewayServices } from '../services.js';
import {
  decodeSegment,
  decodeUtf8,
  parseJson,
  rawPathSegments,
  readBody,
  strictQuery,
} from '../validation.js';
import { type DeclaredView, sourceChain } from '../../shared/view-catalog.js';
import { declaredRoutes } from './declared.js';

const VIEWS_PARTITION = 0;

/** `/v1/views/:v`, decoded strictly from the raw URL. */
function viewName(c: Context): string {
  strictQuery(c.req.url);
  return checkCollection(decodeSegment(rawPathSegments(c.req.url)[3], 'view'));
}

export function viewRoutes(app: Hono, services: GatewayServices, guard: ScopeGuard) {
  const { config, log, topology, views } = services;
  const on = declaredRoutes(app, guard);

  /** The processor's progress of this version of the view; null where none runs it here. */
  const progressOf = (name: string, version: number) => {
    const progress = services.viewProcessing?.progress(name) ?? null;
    return progress?.version === version ? progress : null;
  };

  const info = (
    all: ReadonlyMap<string, DeclaredView>,
    name: string,
    declared: DeclaredView,
  ): ViewInfo => {
    const chain = sourceChain(all, declared.view.from);
    const progress = progressOf(name, declared.version);
    return {
      view: name,
      definition: declared.definition,
      version: declared.version,
      source: chain[chain.length - 1],
      frontiers: progress?.frontiers ?? null,
      refusedRecords: progress?.refusedRecords ?? null,
      lateRecords: progress?.lateRecords ?? null,
    };
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
    if (existing !== undefined) {
      if (JSON.stringify(existing.definition) === JSON.stringify(definition)) {
        return c.json(info(all, name, existing));
      }
      throw viewExists(name);
    }
    if (topics.some((topic) => topic.name === name)) {
      throw badRequest(
        'view_name_taken',
        `${name} is a collection: a view needs a name of its own`,
        {
          view: name,
        },
      );
    }
    if (!all.has(parsed.from) && !topics.some((topic) => topic.name === parsed.from)) {
      throw notFound('source_not_found', `no collection or view ${parsed.from} to derive from`, {
        from: parsed.from,
      });
    }
    if (sourceChain(all, parsed.from).includes(name)) {
      throw badRequest('view_cycle', `${name} would derive from itself through ${parsed.from}`, {
        view: name,
      });
    }
    const record = {
      key: name,
      value: new TextEncoder().encode(JSON.stringify(definition)),
      timestampMs: Date.now(),
    };
    const { written } = await writeRecords(
      services,
      VIEWS_TOPIC,
      [record],
      new Map(),
      () => VIEWS_PARTITION,
    );
    await log.ensureTopic(name);
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
    declaredOrThrow(all, name);
    const dependents = [...all].filter(([, other]) => other.view.from === name).map(([n]) => n);
    if (dependents.length > 0) {
      throw new TailbaseError(
        409,
        'view_has_dependents',
        `views ${dependents.join(', ')} derive from ${name}: drop them first`,
        { view: name, dependents },
      );
    }
    const drop = { key: name, value: null, timestampMs: Date.now() };
    await writeRecords(services, VIEWS_TOPIC, [drop], new Map(), () => VIEWS_PARTITION);
    // Its processor stops before the topic goes, or an append of its would create it again.
    await services.viewProcessing?.settle();
    if ((await log.topics()).some((topic) => topic.name === name && isCollectionTopic(name))) {
      await log.deleteTopic(name);
      await services.incarnations.refresh();
    }
    await Promise.all(topology.nodes.map((node) => replaceStores(config, node)));
    const answer: ViewDropAnswer = { view: name, dropped: true };
    return c.json(answer);
  });
}

function declaredOrThrow(all: ReadonlyMap<string, DeclaredView>, name: string): DeclaredView {
  const declared = all.get(name);
  if (declared === undefined) throw notFound('view_not_found', `no view ${name}`, { view: name });
  return declared;
}

function viewExists(name: string): TailbaseError {
  return new TailbaseError(
    409,
    'view_exists',
    `view ${name} exists with another definition: drop it (DELETE /v1/views/${name}) and declare it again`,
    { view: name },
  );
}
