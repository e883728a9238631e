/**
 * The change feed, live: the newest lines first, from when following started. A view's reset
 * (its redefinition swapped in) is shown as what it is, and the rows of that view shown before it
 * leave the list: the new version's documents replace them.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, isReset, type ChangeLine } from './api.js';

/** Events kept on screen; older ones drop off the end. */
export const CHANGES_SHOWN_MAX = 100;
/** Characters of a value shown in the list. */
const VALUE_CHARS_MAX = 160;

const summary = (value: unknown) => {
  if (value === null) return 'deleted';
  const text = JSON.stringify(value);
  return text.length > VALUE_CHARS_MAX ? `${text.slice(0, VALUE_CHARS_MAX - 1)}…` : text;
};

export function ChangesPanel({ collections }: { collections: string[] }) {
  const [collection, setCollection] = useState('');
  const [following, setFollowing] = useState(false);
  const [lines, setLines] = useState<ChangeLine[]>([]);
  const [error, setError] = useState<string | null>(null);
  const stop = useRef<AbortController | null>(null);

  useEffect(() => () => stop.current?.abort(), []);

  const start = () => {
    const controller = new AbortController();
    stop.current = controller;
    setFollowing(true);
    setError(null);
    setLines([]);
    api
      .changes(collection === '' ? undefined : collection, controller.signal, (line) =>
        setLines((shown) => {
          const kept = isReset(line)
            ? shown.filter((s) => s.collection !== line.collection)
            : shown;
          return [line, ...kept].slice(0, CHANGES_SHOWN_MAX);
        }),
      )
      .catch((failure: Error) => {
        if (!controller.signal.aborted) setError(failure.message);
      })
      .finally(() => {
        if (stop.current === controller) setFollowing(false);
      });
  };

  return (
    <section aria-labelledby="changes-title">
      <h2 id="changes-title">Changes</h2>
      <div class="row">
        <label for="changes-collection">Collection</label>
        <select
          id="changes-collection"
          value={collection}
          disabled={following}
          onChange={(event) => setCollection(event.currentTarget.value)}
        >
          <option value="">every collection</option>
          {collections.map((name) => (
            <option key={name} value={name}>
              {name}
            </option>
          ))}
        </select>
        {following ? (
          <button type="button" onClick={() => stop.current?.abort()}>
            Stop following
          </button>
        ) : (
          <button type="button" onClick={start}>
            Follow changes
          </button>
        )}
        <span class="note" role="status">
          {following ? 'Following from now…' : 'Not following.'}
        </span>
      </div>
      {error !== null && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      <ol class="changes" aria-label="changes, newest first">
        {lines.map((line) =>
          isReset(line) ? (
            <li key={`${line.collection}/reset/${line.version}`} class="reset">
              <code>{line.collection}</code> view rebuilt as version {line.version}: what came
              before is replaced
            </li>
          ) : (
            <li key={`${line.collection}/${line.partition}/${line.offset}`}>
              <code>
                {line.collection}/{line.partition}@{line.offset}
              </code>{' '}
              <strong>{line.key}</strong> {summary(line.value)}
            </li>
          ),
        )}
      </ol>
    </section>
  );
}
