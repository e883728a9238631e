/**
 * SASL/PLAIN (RFC 4616) with tailbase's API keys as passwords: the username is free (it names
 * the principal in logs), the password must be one of the keys. Kafka's two framings are both
 * spoken: SaslHandshake v1 then SaslAuthenticate requests, or after a v0 handshake the PLAIN
 * message as a bare size-prefixed frame answered by an empty one.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

export const PLAIN_MECHANISM = 'PLAIN';

/** The username when the message carries one of the keys as its password; else null. */
export function authenticatePlain(message: Buffer, apiKeys: readonly string[]): string | null {
  const parts = message.toString('utf8').split('\0');
  if (parts.length !== 3) return null;
  const [, username, password] = parts;
  if (username === '') return null;
  const given = digest(password);
  // Every key is compared, so the time taken does not say how many keys there are before a match.
  let matched = false;
  for (const key of apiKeys) matched = timingSafeEqual(given, digest(key)) || matched;
  return matched ? username : null;
}

/** Equal-length inputs for timingSafeEqual, whatever the lengths of the keys. */
function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
