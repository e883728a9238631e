/**
 * The views' rows of GET /v1/status: each view's version and topic, the source records its
 * processor has not processed, and a redefinition's progress (processed of the source's end
 * offsets when it was declared), as far as a processor beside this gateway answers.
 */
import type { ViewProcessing, ViewProgress } from '../shared/view-api.js';
import type { CatalogView } from '../shared/view-catalog.js';
import type { Status } from './api/index.js';

const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);

export function viewRows(
  views: ReadonlyMap<string, CatalogView>,
  processing: ViewProcessing | null,
): Status['views'] {
  const progress = (name: string, version: number): ViewProgress | null =>
    processing?.progress(name, version) ?? null;
  return [...views].map(([name, view]) => {
    const serving = progress(name, view.version);
    const { rebuild } = view;
    const rebuilt = rebuild === null ? null : progress(name, rebuild.version);
    return {
      view: name,
      version: view.version,
      topic: view.topic,
      lagRecords: serving === null ? null : sum(serving.frontiers.map((f) => f.lag)),
      rebuilding:
        rebuild === null
          ? null
          : {
              version: rebuild.version,
              processed:
                rebuilt === null
                  ? null
                  : sum(
                      rebuilt.frontiers.map((f) =>
                        Math.min(f.processed, rebuild.targets[String(f.partition)] ?? 0),
                      ),
                    ),
              total: sum(Object.values(rebuild.targets)),
            },
    };
  });
}
