/**
 * The views: each with its definition, its version and source, its lag per source partition,
 * the records it refused or found late, and while a redefinition is built beside it, that
 * build's progress (processed of the source offsets it has to reach before the swap).
 */
import type { ViewInfo } from './api.js';

const cell = (value: number | null) => (value === null ? '–' : value);

/** The processed and total source offsets of a redefinition's build, over its partitions. */
function buildProgress(rebuilding: NonNullable<ViewInfo['rebuilding']>) {
  const partitions = rebuilding.partitions ?? [];
  const processed = partitions.reduce((sum, p) => sum + Math.min(p.processed, p.total), 0);
  const total = partitions.reduce((sum, p) => sum + p.total, 0);
  return { processed, total, known: rebuilding.partitions !== null };
}

function Rebuilding({ view }: { view: ViewInfo }) {
  if (view.rebuilding === null) return <td data-col="rebuild">–</td>;
  const { processed, total, known } = buildProgress(view.rebuilding);
  return (
    <td data-col="rebuild">
      <div>
        version {view.rebuilding.version}: <code>{JSON.stringify(view.rebuilding.definition)}</code>
      </div>
      {known ? (
        <span>
          <progress
            max={Math.max(total, 1)}
            value={processed}
            aria-label={`rebuild of view ${view.view}`}
          />{' '}
          <span data-col="rebuild-progress">
            {processed} of {total}
          </span>
        </span>
      ) : (
        <span>no processor answered</span>
      )}
    </td>
  );
}

export function ViewsPanel({ views, error }: { views: ViewInfo[] | null; error: string | null }) {
  return (
    <section aria-labelledby="views-title">
      <h2 id="views-title">Views</h2>
      {error !== null && (
        <p role="alert" class="error">
          Views unavailable: {error}
        </p>
      )}
      {views === null ? (
        <p class="note">Reading the views…</p>
      ) : views.length === 0 ? (
        <p class="note">No views declared (PUT /v1/views/NAME).</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th>View</th>
              <th>Definition</th>
              <th>Version</th>
              <th>Lag per source partition</th>
              <th>Refused</th>
              <th>Late</th>
              <th>Redefinition</th>
            </tr>
          </thead>
          <tbody>
            {views.map((view) => (
              <tr key={view.view} data-view={view.view}>
                <td data-col="view">{view.view}</td>
                <td data-col="definition">
                  <code>{JSON.stringify(view.definition)}</code>
                </td>
                <td class="num" data-col="version">
                  {view.version}
                </td>
                <td data-col="lag">
                  {view.frontiers === null
                    ? 'no processor answered'
                    : view.frontiers.map((f) => (
                        <span key={f.partition} data-partition={f.partition}>
                          {view.source}/{f.partition}: {f.lag}{' '}
                        </span>
                      ))}
                </td>
                <td class="num" data-col="refused">
                  {cell(view.refusedRecords)}
                </td>
                <td class="num" data-col="late">
                  {cell(view.lateRecords)}
                </td>
                <Rebuilding view={view} />
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
