/**
 * A collection's settings: read them (where the gateway serves them), edit them as JSON, save
 * them (a record in the log; the answer is the settings as the gateway took them).
 */
import { useState } from 'preact/hooks';
import { api, ApiError } from './api.js';

const EXAMPLE = '{\n  "searchable": ["title", "body"],\n  "weights": { "title": 3 }\n}';

export function SettingsPanel({ collections }: { collections: string[] }) {
  const [collection, setCollection] = useState('');
  const [text, setText] = useState('');
  const [message, setMessage] = useState<{ error: boolean; text: string } | null>(null);

  const load = async () => {
    try {
      setText(JSON.stringify(await api.settings(collection), null, 2));
      setMessage(null);
    } catch (error) {
      const missing = error instanceof ApiError && (error.status === 404 || error.status === 405);
      setMessage({
        error: true,
        text: missing
          ? `This gateway does not serve settings to read (${(error as Error).message}); ` +
            'saving them works.'
          : (error as Error).message,
      });
    }
  };

  const save = async (event: Event) => {
    event.preventDefault();
    let settings: unknown;
    try {
      settings = JSON.parse(text);
    } catch (error) {
      return setMessage({ error: true, text: `Not JSON: ${(error as Error).message}` });
    }
    try {
      // As the gateway took them, topic configs included: the text saves again as it stands.
      const saved = await api.saveSettings(collection, settings);
      setText(JSON.stringify({ ...saved.settings, ...saved.topicConfigs }, null, 2));
      setMessage({ error: false, text: `Saved the settings of ${collection}.` });
    } catch (error) {
      setMessage({ error: true, text: (error as Error).message });
    }
  };

  return (
    <section aria-labelledby="settings-title">
      <h2 id="settings-title">Collection settings</h2>
      <form onSubmit={save} class="grid">
        <label for="settings-collection">Collection</label>
        <input
          id="settings-collection"
          list="collections"
          required
          autocomplete="off"
          value={collection}
          onInput={(event) => setCollection(event.currentTarget.value)}
        />
        <label for="settings-json">Settings (JSON)</label>
        <textarea
          id="settings-json"
          rows={8}
          placeholder={EXAMPLE}
          value={text}
          onInput={(event) => setText(event.currentTarget.value)}
        />
        <div class="buttons">
          <button type="button" disabled={collection === ''} onClick={() => void load()}>
            Load
          </button>{' '}
          <button type="submit">Save</button>
        </div>
      </form>
      {collections.length === 0 && <p class="note">No collections yet: write a document first.</p>}
      {message !== null && (
        <p role={message.error ? 'alert' : 'status'} class={message.error ? 'error' : 'note'}>
          {message.text}
        </p>
      )}
    </section>
  );
}
