/**
 * SASL/PLAIN (RFC 4616) with tailbase's API keys as passwords: the username is free (it names
 * the principal in logs), the password must be one of the keys, whose scopes then bound what the
 * connection may do (read, write, admin: as on the HTTP API). Kafka's two framings are both
 * spoken: SaslHandshake v1 then SaslAuthenticate requests, or after a v0 handshake the PLAIN
 * message as a bare size-prefixed frame answered by an empty one.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { ApiKey, Scope } from '../../shared/api-keys.js';
import { VIEW_WRITER_USERNAME } from '../../shared/view-api.js';

export interface KafkaPrincipal {
  username: string;
  scopes: readonly Scope[];
  /** A view processor (authenticated with the cluster secret): it may write views' topics. */
  viewWriter?: boolean;
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

/**
 * A view processor: VIEW_WRITER_USERNAME with the cluster secret as its password. A Kafka client
 * that does not know the secret cannot claim it, whatever it calls itself; one that does is as
 * trusted as any node of the cluster, and gets every scope.
 */
export function authenticateViewWriter(
  message: Buffer,
  secret: string | null,
): KafkaPrincipal | null {
  const parts = message.toString('utf8').split('\0');
  if (secret === null || parts.length !== 3 || parts[1] !== VIEW_WRITER_USERNAME) return null;
  if (!timingSafeEqual(digest(parts[2]), digest(secret))) return null;
  return { username: VIEW_WRITER_USERNAME, scopes: ['read', 'write', 'admin'], viewWriter: true };
}

/** Equal-length inputs for timingSafeEqual, whatever the lengths of the keys. */
function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
