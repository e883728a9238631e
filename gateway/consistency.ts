/**
 * Turns a read's token and `consistency=` into what the serve-nodes must wait for, and the
 * offsets a read was served at back into the token it answers with.
 *
 * A read of collection C waits for what the token holds of C (partition → offset of C's topic)
 * and for the token's entry of the settings topic (partition 0 of `SETTINGS_TOPIC`, under
 * `collectionId(SETTINGS_TOPIC)`): a settings write answers with that entry, and a read that
 * carries it is served by nodes that applied those settings. Entries of other collections ask
 * nothing of a read of C.
 */
import type { Context } from 'hono';
import type { AppliedOffsets, ServeReadOptions } from '../shared/serve-api.js';
import { badRequest, TailbaseError } from '../shared/errors.js';
import {
  collectionOffsets,
  droppedIncarnationIn,
  mergeTokenOffsets,
  offsetsOf,
  type TokenOffsets,
} from '../shared/token.js';
import { SETTINGS_TOPIC } from '../shared/topics.js';
import { partitionsUnavailable } from '../shared/topic-offsets.js';
import { CONSISTENCY_LEVELS, TOKEN_HEADER, type Consistency } from './api/constants.js';
import type { GatewayServices } from './services.js';
import type { ServeNode } from './topology.js';
import { enumParam, intParam } from './validation.js';
import { tokenNamesOthers, viewWaits } from './view-waits.js';
import { topicOf, viewOfTopic } from '../shared/view-catalog.js';
import { beforeBound, withinWait, type WaitBound } from './wait-deadline.js';

export { TOKEN_HEADER, CONSISTENCY_LEVELS, type Consistency } from './api/constants.js';

/** The request's token (header first, then `token=`); an empty map when it sent none. */
export function requestToken(
  c: Context,
  query: Map<string, string>,
  services: GatewayServices,
): Map<number, Map<number, number>> {
  const text = c.req.header(TOKEN_HEADER) ?? query.get('token');
  return text === undefined || text === '' ? new Map() : services.tokens.decode(text);
}

export interface ReadPlan {
  /**
   * The topic read: the collection's, or for a view the topic of the version the catalog read
   * names (one version a read: after a swap, the new one).
   */
  topic: string;
  /** For a view, the version read (its definition's offset in the views topic); else null. */
  version: number | null;
  token: TokenOffsets;
  /** The incarnation of the collection read (0 when the log holds none of that name). */
  incarnation: number;
  /** Partition of the collection's topic → the offset the read must include. */
  waitFor: Record<number, number>;
  /** The offset of the settings topic's partition the read must include, if any. */
  settingsWaitFor: number | undefined;
  waitMs: number;
  /** The wait's bound at the edge, from the moment the read began (before the log's offsets). */
  bound: WaitBound;
}

/** The settings topic has one partition: settings of every collection live in it. */
const SETTINGS_PARTITION = 0;

export async function planRead(
  c: Context,
  query: Map<string, string>,
  services: GatewayServices,
  name: string,
  partitions: readonly number[],
  /** Planned again after the view's version was swapped under the first plan's wait. */
  replanned = false,
): Promise<ReadPlan> {
  const { limits } = services.config;
  const startedMs = performance.now();
  const token = requestToken(c, query, services);
  const hasToken = c.req.header(TOKEN_HEADER) !== undefined || query.has('token');
  const consistency: Consistency =
    enumParam(query, 'consistency', CONSISTENCY_LEVELS) ?? (hasToken ? 'token' : 'eventual');
  const waitMs = intParam(query, 'wait_ms', 0, limits.waitMsMax, limits.waitMsDefault);
  const bound = { waitMs, startedMs, slackMs: limits.waitSlackMs };
  // What the read asks of the log (its topics, for the token's incarnation; a strong read's end
  // offsets) is inside its wait: a log-node busy taking a bulk load answers late.
  const fromLog = <T>(ask: () => Promise<T>, what: string) =>
    consistency === 'eventual'
      ? ask()
      : beforeBound(
          bound,
          ask,
          () =>
            new TailbaseError(504, 'not_caught_up', `${what} not read within ${waitMs} ms`, {
              topic: name,
              partitions: [...partitions],
            }),
        );
  // A name the catalog read a moment ago (as the incarnations are kept) knows as no view is a
  // collection's: its own topic, no read of the log. A view's read takes the catalog as of now,
  // so after a swap it is served by the new version.
  const recent = services.views.recent(services.config.topologyRefreshMs);
  const views =
    recent !== null && viewOfTopic(recent, name) === null
      ? recent
      : await fromLog(() => services.views.current(), 'the view definitions were');
  const collection = topicOf(views, name);
  const current = await fromLog(
    () => services.incarnations.of(collection),
    `the log's topics (for ${collection}'s incarnation) were`,
  );
  refuseDroppedIncarnation(token, collection, current, limits.incarnationsCheckedMax);
  const incarnation = current ?? 0;
  const waitFor: Record<number, number> = {};
  let settingsWaitFor: number | undefined;
  if (consistency === 'token' || consistency === 'strong') {
    const asked = offsetsOf(token, collection, incarnation);
    for (const p of partitions) {
      const offset = asked.get(p);
      if (offset !== undefined) waitFor[p] = offset;
    }
    settingsWaitFor = offsetsOf(token, SETTINGS_TOPIC).get(SETTINGS_PARTITION);
  }
  let strongEnds: Map<string, Map<number, number>> | null = null;
  if (consistency === 'strong') {
    const wanted = new Set(partitions);
    const ends = await fromLog(
      () => services.log.offsets(),
      `the log's end offsets of ${collection} were`,
    );
    strongEnds = new Map();
    const answered = new Set<number>();
    for (const { topic, partition, endOffset } of ends) {
      if (topic === collection) answered.add(partition);
      if (endOffset === 0) continue;
      const topicEnds = strongEnds.get(topic) ?? new Map<number, number>();
      strongEnds.set(topic, topicEnds.set(partition, endOffset - 1));
      if (topic === collection && wanted.has(partition)) {
        waitFor[partition] = Math.max(waitFor[partition] ?? -1, endOffset - 1);
      } else if (topic === SETTINGS_TOPIC && partition === SETTINGS_PARTITION) {
        settingsWaitFor = Math.max(settingsWaitFor ?? -1, endOffset - 1);
      }
    }
    // The log leaves out a partition that has no leader or whose log failed: without its high
    // watermark a read cannot see every acknowledged write, so it is refused, not served short.
    const unknown = current === undefined ? [] : partitions.filter((p) => !answered.has(p));
    if (unknown.length > 0) throw partitionsUnavailable(collection, unknown);
  }
  // A view read with a token of a source, or a strong one, waits for the view's processors too.
  if (
    strongEnds !== null ||
    (consistency === 'token' && tokenNamesOthers(token, collection, incarnation))
  ) {
    const view = viewOfTopic(views, collection);
    if (view !== null && view.topic === collection) {
      const remainingMs = () => waitMs - (performance.now() - startedMs);
      let needs: Map<number, number>;
      try {
        needs = await viewWaits(services, views, view.view.name, {
          token,
          strongEnds,
          remainingMs,
        });
      } catch (error) {
        // The version it waited on was swapped out meanwhile: once more, on the new version.
        const swapped = error instanceof TailbaseError && error.code === 'view_processor_stopped';
        if (!swapped || replanned) throw error;
        return planRead(c, query, services, name, partitions, true);
      }
      for (const p of partitions) {
        const offset = needs.get(p);
        if (offset !== undefined) waitFor[p] = Math.max(waitFor[p] ?? -1, offset);
      }
    }
  }
  const version = views.get(name)?.version ?? null;
  return {
    topic: collection,
    version,
    token,
    incarnation,
    waitFor,
    settingsWaitFor,
    waitMs,
    bound,
  };
}

/**
 * A token of a collection as it was before it was dropped asks for offsets of records that are
 * gone: waiting for them would only end in a 504, so it is refused at once.
 */
function refuseDroppedIncarnation(
  token: TokenOffsets,
  collection: string,
  incarnation: number | undefined,
  incarnationsCheckedMax: number,
): void {
  const dropped = droppedIncarnationIn(token, collection, incarnation, incarnationsCheckedMax);
  if (dropped === undefined) return;
  const now =
    incarnation === undefined
      ? 'it does not exist now'
      : 'the collection of that name now is another one';
  throw badRequest(
    'invalid_token',
    `the token names collection ${collection} as it was before it was dropped; ${now}: read without the token, or with one of a later write`,
    { reason: 'dropped_collection', collection },
  );
}

/**
 * A read of `partitions` on `node`, waiting for the plan's offsets of them and its settings
 * offset, within what is left of the read's wait: the edge answers 504 at its bound
 * (wait-deadline.ts) whatever the node is doing.
 */
export function readOn<T>(
  plan: ReadPlan,
  collection: string,
  node: ServeNode,
  partitions: readonly number[],
  read: (wait: ServeReadOptions) => Promise<T>,
): Promise<T> {
  const waitFor: Record<number, number> = {};
  for (const p of partitions) if (plan.waitFor[p] !== undefined) waitFor[p] = plan.waitFor[p];
  const wait = { waitFor, settingsWaitFor: plan.settingsWaitFor, waitMs: plan.waitMs };
  return withinWait(plan.bound, collection, node, wait, read);
}

/**
 * The token a read of `collection` was served at: what the client sent, raised to what the
 * replicas applied of the collection's partitions.
 */
export function servedToken(
  plan: ReadPlan,
  collection: string,
  applied: AppliedOffsets,
  partitions: readonly number[],
): Map<number, Map<number, number>> {
  const servedAt = new Map<number, number>();
  for (const p of partitions) {
    const next = applied[String(p)];
    if (next !== undefined && next > 0) servedAt.set(p, next - 1);
  }
  return mergeTokenOffsets(plan.token, collectionOffsets(collection, servedAt, plan.incarnation));
}

/** Copies the applied offsets of `partitions` from one node's answer into a merged answer. */
export function collectApplied(
  into: AppliedOffsets,
  from: AppliedOffsets,
  partitions: readonly number[],
): void {
  for (const p of partitions) {
    const next = from[String(p)];
    if (next !== undefined) into[String(p)] = next;
  }
}
