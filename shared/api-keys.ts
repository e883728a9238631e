/**
 * API keys, as `--api-keys` / TAILBASE_API_KEYS give them (`KEY:read,write;KEY2:admin`): the
 * gateway checks them on HTTP, and the log-node's Kafka listener takes them as SASL/PLAIN
 * passwords.
 */
export type Scope = 'read' | 'write' | 'admin';

export interface ApiKey {
  key: string;
  scopes: Scope[];
}

/** The shortest key accepted: a guessable key is no key. */
export const API_KEY_CHARS_MIN = 16;

export function parseApiKeys(text: string): ApiKey[] {
  const scopes: Scope[] = ['read', 'write', 'admin'];
  return text
    .split(';')
    .map((entry) => entry.trim())
    .filter((entry) => entry.length > 0)
    .map((entry) => {
      const at = entry.lastIndexOf(':');
      const key = at < 0 ? entry : entry.slice(0, at);
      const named = at < 0 ? ['read', 'write', 'admin'] : entry.slice(at + 1).split(',');
      for (const scope of named) {
        if (!scopes.includes(scope as Scope)) throw new Error(`unknown API key scope "${scope}"`);
      }
      if (key.length < API_KEY_CHARS_MIN) {
        throw new Error(`an API key must be at least ${API_KEY_CHARS_MIN} characters`);
      }
      return { key, scopes: named as Scope[] };
    });
}
