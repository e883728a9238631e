/** Asks for the API key the gateway requires; the key is kept only in this tab (sessionStorage). */
import { useState } from 'preact/hooks';

export function KeyPrompt({
  refused,
  onKey,
}: {
  refused: string | null;
  onKey: (key: string) => void;
}) {
  const [key, setKey] = useState('');
  return (
    <section aria-labelledby="key-title">
      <h2 id="key-title">API key required</h2>
      <p>
        This gateway requires an API key. It is kept in this tab only and sent with each request.
      </p>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          if (key.trim() !== '') onKey(key.trim());
        }}
      >
        <label for="api-key">API key</label>
        <input
          id="api-key"
          type="password"
          autocomplete="off"
          autoFocus
          value={key}
          onInput={(event) => setKey(event.currentTarget.value)}
        />
        <button type="submit">Use key</button>
      </form>
      {refused !== null && (
        <p role="alert" class="error">
          {refused}
        </p>
      )}
    </section>
  );
}
