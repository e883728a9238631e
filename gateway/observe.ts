/**
 * Per-request observability: a request id (the caller's `X-Request-Id` when it is sane, else a
 * random UUID: node's is pooled and ~100x cheaper than a ULID, which costs 0.1 ms a call here)
 * echoed in the response and in the request's log line, and the request and latency metrics
 * labelled by route pattern (never by raw path, which would explode the label set).
 */
import type { MiddlewareHandler } from 'hono';
import { routePath } from 'hono/route';
import { randomUUID } from 'node:crypto';
import type { Logger } from '../shared/logger.js';
import { setEdgeHeader } from './edge-headers.js';
import type { GatewayMetrics } from './metrics.js';

const REQUEST_ID_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;

export function observe(logger: Logger, metrics: GatewayMetrics): MiddlewareHandler {
  return async function observeRequest(c, next) {
    const startedMs = performance.now();
    const incoming = c.req.header('x-request-id');
    const requestId = incoming && REQUEST_ID_PATTERN.test(incoming) ? incoming : randomUUID();
    // Set before the handler builds its response: a header added to a finished response makes
    // @hono/node-server materialize a full web Response, which doubled the CPU of a PUT.
    setEdgeHeader(c, 'x-request-id', requestId);
    await next();
    const route = routePath(c, -1);
    const seconds = (performance.now() - startedMs) / 1000;
    metrics.requests.observe(c.req.method, route, c.res.status, seconds);
    if (logger.isLevelEnabled('debug') || c.res.status >= 500) {
      logger[c.res.status >= 500 ? 'error' : 'debug'](
        { reqId: requestId, method: c.req.method, route, status: c.res.status, ms: seconds * 1000 },
        'request',
      );
    }
  };
}
