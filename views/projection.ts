/**
 * A projection view: each source document that passes the filter becomes an output document of
 * the same key holding the selected fields; one that is deleted or no longer passes becomes a
 * tombstone, written only for keys the view holds. The docs table keeps each output document's
 * JSON, for its owner to append one again (fence-watch.ts).
 */
import type { ParsedView } from '../shared/view-definition.js';
import type { SourceDocument } from './grouping.js';
import type { ViewState } from './view-state.js';

type Projection = Extract<ParsedView, { kind: 'projection' }>;

export function applyProjection(view: Projection, state: ViewState, source: SourceDocument): void {
  if (source.doc === null) {
    if (state.docs.get(source.key) === undefined) return;
    state.docs.remove(source.key);
    state.outbox.put(source.key, { json: null });
    return;
  }
  const out: Record<string, unknown> = {};
  for (const field of view.select) {
    if (source.doc[field] !== undefined) out[field] = source.doc[field];
  }
  const json = JSON.stringify(out);
  state.docs.put(source.key, json);
  state.outbox.put(source.key, { json });
}
