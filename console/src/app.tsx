/**
 * The console: asks for an API key when the gateway requires one, then shows the status and the
 * views (polled live), the query box, the change feed and the collection settings.
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import {
  api,
  ApiError,
  apiKey,
  type ClusterStatus,
  type CollectionSummary,
  type ViewInfo,
} from './api.js';
import { ChangesPanel } from './changes-panel.js';
import { KeyPrompt } from './key-prompt.js';
import { QueryPanel } from './query-panel.js';
import { SettingsPanel } from './settings-panel.js';
import { StatusPanel } from './status-panel.js';
import { ViewsPanel } from './views-panel.js';

/** How often the status is read again: the lag a person watches moves at this pace. */
export const STATUS_POLL_MS = 1000;
/**
 * How often the collections' document counts and bytes are read again: each is a count on every
 * node, and the search store's bytes a read of its every page.
 */
export const COLLECTIONS_POLL_MS = 5000;

type Access =
  { state: 'checking' } | { state: 'needs-key'; refused: string | null } | { state: 'in' };

const isAuthError = (error: unknown) =>
  error instanceof ApiError && (error.status === 401 || error.status === 403);

export function App() {
  const [access, setAccess] = useState<Access>({ state: 'checking' });
  const [status, setStatus] = useState<ClusterStatus | null>(null);
  const [statusError, setStatusError] = useState<string | null>(null);
  const [updatedAt, setUpdatedAt] = useState<Date | null>(null);
  const [listed, setListed] = useState<ReadonlyMap<string, CollectionSummary>>(new Map());
  const countedAtMs = useRef(-Infinity);
  const [views, setViews] = useState<ViewInfo[] | null>(null);
  const [viewsError, setViewsError] = useState<string | null>(null);

  const listingViews = useRef(false);
  const count = useCallback(async () => {
    countedAtMs.current = performance.now();
    try {
      const collections = await api.collections();
      setListed(new Map(collections.map((c) => [c.collection, c])));
    } catch {
      // The counts and bytes are extras: the status row shows without them.
    }
  }, []);

  /** Reads the status; answers false when the gateway refused the key (or its absence). */
  const refresh = useCallback(async (): Promise<boolean> => {
    // Read with the status, so a redefinition's progress moves at the status's pace; a slow
    // listing is not asked for again before it answers, so calls do not pile up.
    if (!listingViews.current) {
      listingViews.current = true;
      void api
        .views()
        .then(
          (listed) => {
            setViews(listed);
            setViewsError(null);
          },
          (error: unknown) => {
            if (!isAuthError(error)) setViewsError((error as Error).message);
          },
        )
        .finally(() => {
          listingViews.current = false;
        });
    }
    try {
      setStatus(await api.status());
      setUpdatedAt(new Date());
      setStatusError(null);
      if (performance.now() - countedAtMs.current >= COLLECTIONS_POLL_MS) void count();
      return true;
    } catch (error) {
      if (isAuthError(error)) return false;
      setStatusError((error as Error).message);
      return true;
    }
  }, [count]);

  const enter = useCallback(async () => {
    const had = apiKey.get();
    if (await refresh()) return setAccess({ state: 'in' });
    apiKey.clear();
    setAccess({
      state: 'needs-key',
      refused: had === null ? null : 'The gateway refused that key.',
    });
  }, [refresh]);

  useEffect(() => void enter(), [enter]);

  useEffect(() => {
    if (access.state !== 'in') return;
    let timer: ReturnType<typeof setTimeout>;
    let stopped = false;
    const tick = async () => {
      const allowed = await refresh();
      if (stopped) return;
      if (!allowed) return void enter();
      timer = setTimeout(tick, STATUS_POLL_MS);
    };
    timer = setTimeout(tick, STATUS_POLL_MS);
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [access.state, refresh, enter]);

  const collections = (status?.collections ?? []).map((c) => c.collection).sort();

  return (
    <>
      <header>
        <h1>tailbase console</h1>
        <span class="where">{location.host}</span>
        {status !== null && <span class="version">tailbase {status.version}</span>}
        {access.state === 'in' && apiKey.get() !== null && (
          <button
            type="button"
            onClick={() => {
              apiKey.clear();
              setStatus(null);
              void enter();
            }}
          >
            Forget API key
          </button>
        )}
      </header>
      <main>
        {access.state === 'checking' && <p>Connecting…</p>}
        {access.state === 'needs-key' && (
          <KeyPrompt
            refused={access.refused}
            onKey={(key) => {
              apiKey.set(key);
              void enter();
            }}
          />
        )}
        {access.state === 'in' && (
          <>
            <StatusPanel
              status={status}
              listed={listed}
              error={statusError}
              updatedAt={updatedAt}
              onDropped={() => {
                void refresh();
                void count();
              }}
            />
            <ViewsPanel views={views} error={viewsError} />
            <QueryPanel collections={collections} />
            <ChangesPanel collections={collections} />
            <SettingsPanel collections={collections} />
          </>
        )}
      </main>
    </>
  );
}
