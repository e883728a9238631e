/**
 * API keys with scopes. A key is sent as `Authorization: Bearer KEY` (or `X-Api-Key: KEY`); keys
 * are compared as SHA-256 digests in constant time. `admin` includes `read` and `write`. With no
 * keys configured every request is allowed, which is why the gateway then binds only loopback.
 */
import { timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { TailbaseError } from '../shared/errors.js';
import { sha256 } from '../shared/http-server.js';
import type { ApiKey, Scope } from './config.js';

/**
 * The middleware that requires `scope`, or null with no keys configured: then nothing is checked,
 * and a middleware that only passes the request on still cost every request a step of hono's
 * chain (issue 28).
 */
export type ScopeGuard = (scope: Scope) => MiddlewareHandler | null;

export function createScopeGuard(keys: ApiKey[]): ScopeGuard {
  const known = keys.map((k) => ({ digest: sha256(k.key), scopes: new Set(k.scopes) }));
  return (scope) => {
    if (known.length === 0) return null;
    return async function requireScope(c, next) {
      const bearer = c.req.header('authorization')?.match(/^Bearer\s+(\S+)$/i)?.[1];
      const presented = bearer ?? c.req.header('x-api-key');
      if (presented === undefined) {
        c.header('www-authenticate', 'Bearer realm="tailbase"');
        throw new TailbaseError(401, 'unauthorized', 'an API key is required');
      }
      const candidate = sha256(presented);
      const match = known.find((k) => timingSafeEqual(k.digest, candidate));
      if (!match) throw new TailbaseError(401, 'invalid_api_key', 'the API key is not valid');
      if (!match.scopes.has(scope) && !match.scopes.has('admin')) {
        throw new TailbaseError(403, 'forbidden', `this API key lacks the ${scope} scope`, {
          scope,
        });
      }
      await next();
    };
  };
}
