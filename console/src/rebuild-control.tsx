/**
 * Rebuilds one serve-node (it wipes its stores and replays the log) after a confirmation, then
 * shows its progress until every partition it hosts has caught up, read as the CLI reads it.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { readRebuildProgress } from '../../client/rebuild-progress.js';
import { api } from './api.js';

/** Between two reads of the node's status during a rebuild. */
export const REBUILD_POLL_MS = 250;
/** How long the console follows a rebuild before it says it has not finished. */
export const REBUILD_FOLLOW_MS_MAX = 60 * 60 * 1000;

type Rebuild =
  | { state: 'idle' }
  | { state: 'confirming' }
  | { state: 'running'; applied: number; total: number }
  | { state: 'done'; records: number; ms: number }
  | { state: 'failed'; message: string };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function RebuildControl({ node }: { node: number }) {
  const [rebuild, setRebuild] = useState<Rebuild>({ state: 'idle' });
  const mounted = useRef(true);
  useEffect(() => () => void (mounted.current = false), []);

  const run = async () => {
    const show = (next: Rebuild) => mounted.current && setRebuild(next);
    try {
      // The ends known before the wipe size the bar from the first read on.
      const before = readRebuildProgress(await api.serveNodeStatus(node));
      const startedMs = performance.now();
      await api.rebuild(node);
      let progress = readRebuildProgress(await api.serveNodeStatus(node), before.ends);
      while (!progress.caughtUp) {
        if (performance.now() - startedMs > REBUILD_FOLLOW_MS_MAX) {
          throw new Error(`not caught up after ${REBUILD_FOLLOW_MS_MAX / 1000} s`);
        }
        if (!mounted.current) return;
        show({ state: 'running', applied: progress.applied, total: progress.total });
        await sleep(REBUILD_POLL_MS);
        progress = readRebuildProgress(await api.serveNodeStatus(node), progress.ends);
      }
      show({ state: 'done', records: progress.applied, ms: performance.now() - startedMs });
    } catch (error) {
      show({ state: 'failed', message: (error as Error).message });
    }
  };

  const busy = rebuild.state === 'running';
  return (
    <div class="rebuild">
      {rebuild.state === 'confirming' ? (
        <span>
          Wipe serve-node {node}'s stores and replay the log?{' '}
          <button
            type="button"
            onClick={() => {
              setRebuild({ state: 'running', applied: 0, total: 0 });
              void run();
            }}
          >
            Confirm rebuild
          </button>{' '}
          <button type="button" onClick={() => setRebuild({ state: 'idle' })}>
            Cancel
          </button>
        </span>
      ) : (
        <button type="button" disabled={busy} onClick={() => setRebuild({ state: 'confirming' })}>
          Rebuild serve-node {node}
        </button>
      )}
      <div role="status" aria-live="polite">
        {rebuild.state === 'running' && (
          <>
            <progress
              max={Math.max(rebuild.total, 1)}
              value={rebuild.applied}
              aria-label={`rebuild of serve-node ${node}`}
            />{' '}
            {rebuild.applied} of {rebuild.total} records
          </>
        )}
        {rebuild.state === 'done' && (
          <span>
            Rebuilt serve-node {node}: {rebuild.records} records in {(rebuild.ms / 1000).toFixed(1)}{' '}
            s.
          </span>
        )}
        {rebuild.state === 'failed' && <span class="error">Rebuild failed: {rebuild.message}</span>}
      </div>
    </div>
  );
}
