/**
 * Read-your-writes through views: what a read of a view must wait for, in the view's own topic,
 * given a token of its source (or of any source up its chain: the token of the original write
 * works at every stage) or `consistency=strong` (the sources' end offsets). Each stage asks its
 * processor to wait until its frontiers pass the source offsets, and takes the view topic's offsets
 * that cover them, which are then the next stage's source offsets; the last stage's are waited for
 * on the serve-nodes as any token's.
 */
import { TailbaseError, unavailable } from '../shared/errors.js';
import { collectionId, offsetsOf, type TokenOffsets } from '../shared/token.js';
import { SETTINGS_TOPIC } from '../shared/topics.js';
import { type CatalogView, topicOf } from '../shared/view-catalog.js';
import type { GatewayServices } from './services.js';

/** Whether the token names any topic but the collection read and the settings. */
export function tokenNamesOthers(
  token: TokenOffsets,
  collection: string,
  incarnation: number,
): boolean {
  const own = collectionId(collection, incarnation);
  const settings = collectionId(SETTINGS_TOPIC);
  for (const id of token.keys()) if (id !== own && id !== settings) return true;
  return false;
}

export interface ViewWaitInput {
  token: TokenOffsets;
  /** The log's end offsets (topic → partition → last offset) for a strong read; null otherwise. */
  strongEnds: ReadonlyMap<string, ReadonlyMap<number, number>> | null;
  /** What is left of the read's wait, ms, when asked. */
  remainingMs: () => number;
}

/**
 * The offsets of the view's own topic (partition → offset) its read must include beyond what the
 * token holds of the view itself; empty when nothing up its chain asks anything.
 */
export async function viewWaits(
  services: GatewayServices,
  views: ReadonlyMap<string, CatalogView>,
  view: string,
  input: ViewWaitInput,
): Promise<Map<number, number>> {
  const declared = views.get(view);
  if (declared === undefined) return new Map();
  // A source view is read from its serving version's topic, which its tokens name.
  const source = topicOf(views, declared.view.from);
  const incarnation = (await services.incarnations.of(source)) ?? 0;
  const needs = new Map(offsetsOf(input.token, source, incarnation));
  for (const [p, o] of input.strongEnds?.get(source) ?? [])
    needs.set(p, Math.max(o, needs.get(p) ?? -1));
  for (const [p, o] of await viewWaits(services, views, declared.view.from, input)) {
    needs.set(p, Math.max(o, needs.get(p) ?? -1));
  }
  if (needs.size === 0) return new Map();
  const processing = services.viewProcessing;
  if (processing === null) {
    throw unavailable(
      'view_processor_unavailable',
      `no view processor runs beside this gateway: a read of ${view} cannot wait for its source; read it with a token of the view, or eventual`,
      { view },
    );
  }
  const waitMs = Math.max(0, input.remainingMs());
  try {
    // The version the catalog read names serves this read: after a swap, the new one.
    return await processing.waitFor(view, declared.version, needs, waitMs);
  } catch (error) {
    if (error instanceof TailbaseError && error.code === 'view_not_found') {
      throw new TailbaseError(
        504,
        'not_caught_up',
        `the processor of view ${view} is not running yet`,
        {
          view,
        },
      );
    }
    throw error;
  }
}
