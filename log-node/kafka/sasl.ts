/**
 * SASL/PLAIN (RFC 4616) with tailbase's API keys as passwords: the username is free (it names
 * the principal in logs), the password must be one of the keys, whose scopes then bound what the
 * connection may do (read, write, admin: as on the HTTP API). Kafka's two framings are both
 * spoken: SaslHandshake v1 then SaslAuthenticate requests, or after a v0 handshake the PLAIN
 * message as a bare size-prefixed frame answered by an empty one.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { ApiKey, Scope } from '../../shared/api-keys.js';

export interface KafkaPrincipal {
  username: string;
  scopes: readonly Scope[];
}

export const PLAIN_MECHANISM = 'PLAIN';

/** Who the message authenticates when it carries one of the keys as its password; else null. */
export function authenticatePlain(
  message: Buffer,
  apiKeys: readonly ApiKey[],
): KafkaPrincipal | null {
  const parts = message.toString('utf8').split('\0');
  if (parts.length !== 3) return null;
  const [, username, password] = parts;
  if (username === '') return null;
  const given = digest(password);
  // Every key is compared, so the time taken does not say how many keys there are before a match.
  let matched: ApiKey | null = null;
  for (const key of apiKeys) {
    if (timingSafeEqual(given, digest(key.key))) matched = key;
  }
  return matched === null ? null : { username, scopes: matched.scopes };
}

/** Equal-length inputs for timingSafeEqual, whatever the lengths of the keys. */
function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
