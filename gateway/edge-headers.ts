/**
 * Response headers of the edge's own (the request id, the token), set on Node's ServerResponse
 * when the app runs under @hono/node-server. Hono's `c.header()` builds a web `Headers` for the
 * response, which the adapter copies back into a plain object header by header: on a GET that
 * was undici's `Headers.set`, `buildOutgoingHttpHeaders` and the Headers' allocations, work a
 * bare handler never does. A header set on the ServerResponse is merged into the answer's by
 * Node itself, error answers included. Under `app.request()` (no socket) they go through
 * `c.header()`.
 */
import type { ServerResponse } from 'node:http';
import type { Context } from 'hono';

export function setEdgeHeader(c: Context, name: string, value: string): void {
  const outgoing = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
  if (outgoing === undefined) c.header(name, value);
  else outgoing.setHeader(name, value);
}
