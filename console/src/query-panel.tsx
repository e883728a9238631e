/**
 * The query box: a ranked search (highlights on; filter, sort and facets passed through as the
 * gateway takes them) or one document by key.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, type DocAnswer, type FacetCounts, type SearchAnswer } from './api.js';
import { Marked } from './marked.js';

/** Where this tab remembers the collection last queried (sessionStorage, as the API key). */
const LAST_COLLECTION_STORAGE = 'tailbase.lastCollection';

/** The collection an empty box starts with: the last one queried, or the only one there is. */
export function preselectedCollection(collections: readonly string[]): string {
  const last = sessionStorage.getItem(LAST_COLLECTION_STORAGE);
  if (last !== null && collections.includes(last)) return last;
  return collections.length === 1 ? collections[0] : '';
}

/** Hits asked for when the limit box is left empty. */
export const SEARCH_LIMIT_DEFAULT = 20;

type Answer =
  | { kind: 'none' }
  | { kind: 'search'; answer: SearchAnswer }
  | { kind: 'doc'; answer: DocAnswer }
  | { kind: 'error'; message: string };

const json = (value: unknown) => JSON.stringify(value, null, 2);

export function QueryPanel({ collections }: { collections: string[] }) {
  const [mode, setMode] = useState<'search' | 'get'>('search');
  const [form, setForm] = useState({
    collection: '',
    q: '',
    filter: '',
    sort: '',
    facets: '',
    limit: '',
    key: '',
  });
  const [answer, setAnswer] = useState<Answer>({ kind: 'none' });
  const [touched, setTouched] = useState(false);
  const preselected = preselectedCollection(collections);
  useEffect(() => {
    // Until the box is typed in, it follows the list: a collection created later is picked up.
    if (!touched && form.collection !== preselected) setForm({ ...form, collection: preselected });
  }, [preselected, touched, form]);
  const [busy, setBusy] = useState(false);
  const field = (name: keyof typeof form) => ({
    id: `query-${name}`,
    value: form[name],
    onInput: (event: { currentTarget: HTMLInputElement }) => {
      if (name === 'collection') setTouched(true);
      setForm({ ...form, [name]: event.currentTarget.value });
    },
  });

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    sessionStorage.setItem(LAST_COLLECTION_STORAGE, form.collection);
    try {
      if (mode === 'search') {
        const { q, filter, sort, facets } = form;
        const limit = form.limit === '' ? SEARCH_LIMIT_DEFAULT : Number(form.limit);
        const result = await api.search(form.collection, { q, filter, sort, facets, limit });
        setAnswer({ kind: 'search', answer: result });
      } else {
        setAnswer({ kind: 'doc', answer: await api.get(form.collection, form.key) });
      }
    } catch (error) {
      setAnswer({ kind: 'error', message: (error as Error).message });
    } finally {
      setBusy(false);
    }
  };

  return (
    <section aria-labelledby="query-title">
      <h2 id="query-title">Query</h2>
      <form onSubmit={submit} class="grid">
        <fieldset class="modes">
          <legend>Find</legend>
          <label>
            <input
              type="radio"
              name="mode"
              checked={mode === 'search'}
              onChange={() => setMode('search')}
            />{' '}
            Search
          </label>
          <label>
            <input
              type="radio"
              name="mode"
              checked={mode === 'get'}
              onChange={() => setMode('get')}
            />{' '}
            Get by key
          </label>
        </fieldset>
        <label for="query-collection">Collection</label>
        <input {...field('collection')} list="collections" required autocomplete="off" />
        <datalist id="collections">
          {collections.map((name) => (
            <option key={name} value={name} />
          ))}
        </datalist>
        {mode === 'search' ? (
          <>
            <label for="query-q">Search for</label>
            <input {...field('q')} type="search" required />
            <label for="query-filter">Filter</label>
            <input {...field('filter')} placeholder="year >= 2000 AND genre = poetry" />
            <label for="query-sort">Sort</label>
            <input {...field('sort')} placeholder="year:desc" />
            <label for="query-facets">Facets</label>
            <input {...field('facets')} placeholder="genre,year" />
            <label for="query-limit">Limit</label>
            <input
              {...field('limit')}
              type="number"
              min="1"
              placeholder={String(SEARCH_LIMIT_DEFAULT)}
            />
          </>
        ) : (
          <>
            <label for="query-key">Key</label>
            <input {...field('key')} required />
          </>
        )}
        <button type="submit" disabled={busy}>
          {mode === 'search' ? 'Search' : 'Get'}
        </button>
      </form>
      <div aria-live="polite" class="answer">
        {answer.kind === 'error' && (
          <p role="alert" class="error">
            {answer.message}
          </p>
        )}
        {answer.kind === 'doc' && (
          <div>
            <p>
              <strong>{answer.answer.key}</strong> at offset {answer.answer.offset}
            </p>
            <pre>{json(answer.answer.value)}</pre>
          </div>
        )}
        {answer.kind === 'search' && <SearchHits answer={answer.answer} />}
      </div>
    </section>
  );
}

function SearchHits({ answer }: { answer: SearchAnswer }) {
  return (
    <div>
      <p>
        {answer.hits.length} shown of {answer.totalRelation === 'gte' ? 'at least ' : ''}
        {answer.total} hit(s).
      </p>
      <ol class="hits">
        {answer.hits.map((hit) => (
          <li key={hit.key}>
            <strong>{hit.key}</strong> <span class="note">score {hit.score.toPrecision(3)}</span>
            {hit.highlights !== undefined && Object.keys(hit.highlights).length > 0 && (
              <dl>
                {Object.entries(hit.highlights).map(([path, text]) => (
                  <div key={path}>
                    <dt>{path}</dt>
                    <dd>
                      <Marked text={text} />
                    </dd>
                  </div>
                ))}
              </dl>
            )}
            <details>
              <summary>value</summary>
              <pre>{json(hit.value)}</pre>
            </details>
          </li>
        ))}
      </ol>
      {answer.facets !== undefined && (
        <dl class="facets">
          {Object.entries(answer.facets).map(([name, facet]) => (
            <div key={name} data-facet={name}>
              <dt>{name}</dt>
              <dd>{facetText(facet)}</dd>
            </div>
          ))}
        </dl>
      )}
    </div>
  );
}

/** `value (count), ...`, then how many values were left out and the numbers' range. */
function facetText(facet: FacetCounts): string {
  const parts = [facet.values.map(({ value, count }) => `${String(value)} (${count})`).join(', ')];
  if (facet.omitted > 0) parts.push(`and ${facet.omitted} more`);
  if (facet.min !== undefined && facet.max !== undefined) {
    parts.push(`from ${facet.min} to ${facet.max}`);
  }
  return parts.filter((part) => part !== '').join('; ');
}
