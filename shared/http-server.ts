/**
 * What every node's HTTP server shares: errors mapped to JSON bodies (never a stack trace), 404s
 * for unknown routes, and a listener that reports its URL and closes cleanly.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Server, ServerResponse } from 'node:http';
import { createAdaptorServer } from '@hono/node-server';
import type { Context, Hono, MiddlewareHandler } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { TailbaseError } from './errors.js';
import { CLUSTER_SECRET_HEADER } from './log-api.js';
import type { Logger } from './logger.js';

export function errorResponse(c: Context, error: unknown, logger?: Logger): Response {
  if (error instanceof TailbaseError) {
    return c.json(error.toBody(), error.status as ContentfulStatusCode);
  }
  if (error instanceof HTTPException) {
    const status = error.status;
    const code = status === 413 ? 'body_too_large' : 'bad_request';
    return c.json({ error: { code, message: error.message || 'bad request' } }, status);
  }
  logger?.error({ err: error, path: c.req.path }, 'unhandled error');
  return c.json({ error: { code: 'internal', message: 'internal error' } }, 500);
}

/** A 200 answer whose JSON body was built as text (to splice in stored JSON unparsed). */
export function jsonText(c: Context, body: string): Response {
  return c.body(body, 200, { 'content-type': 'application/json; charset=utf-8' });
}

/** Installs the shared error and not-found handlers on an app. */
export function installErrorHandlers(app: Hono<any>, logger?: Logger): void {
  app.onError((error, c) => errorResponse(c, error, logger));
  app.notFound((c) =>
    c.json(
      { error: { code: 'not_found', message: `no route for ${c.req.method} ${c.req.path}` } },
      404,
    ),
  );
}

/** A secret's digest: secrets are compared as SHA-256 digests, in constant time, of any length. */
export const sha256 = (text: string) => createHash('sha256').update(text).digest();

/**
 * Middleware for `/internal/*`: every call must carry the cluster secret when one is set,
 * compared as SHA-256 digests in constant time.
 */
export function requireClusterSecret(secret: string | undefined): MiddlewareHandler {
  const expected = secret ? sha256(secret) : null;
  return async function clusterSecret(c, next) {
    const sent = c.req.header(CLUSTER_SECRET_HEADER);
    if (expected && (sent === undefined || !timingSafeEqual(sha256(sent), expected))) {
      throw new TailbaseError(401, 'unauthorized', 'internal calls need the cluster secret');
    }
    await next();
  };
}

export interface Listener {
  url: string;
  port: number;
  server: Server;
  /**
   * Stops taking connections, lets `drain` finish what is in flight (appends fsynced, writes
   * taken), waits up to `answerWaitMsMax` for every request already in to be answered (each on a
   * connection that then closes), then cuts every connection left: a keep-alive client would
   * otherwise keep sending requests and hold the server open until its timeout.
   */
  close(drain?: () => Promise<void>): Promise<void>;
}

export interface ListenOptions {
  /** How long a closing server waits for the answers to requests already in, ms. */
  answerWaitMsMax?: number;
}

export const CLOSE_ANSWER_WAIT_MS_MAX = 5000;

export async function listen(
  app: Hono<any>,
  host: string,
  port: number,
  options: ListenOptions = {},
): Promise<Listener> {
  const server = createAdaptorServer({ fetch: app.fetch, hostname: host }) as Server;
  const answering = new Set<ServerResponse>();
  let closing = false;
  let allAnswered = () => {};
  // First of the request listeners, so the answer's headers are not written yet.
  server.prependListener('request', (_request, response: ServerResponse) => {
    if (closing) response.shouldKeepAlive = false;
    answering.add(response);
    response.once('close', () => {
      answering.delete(response);
      if (answering.size === 0) allAnswered();
    });
  });
  // Long-polls hold a request open for up to their wait; keep-alive sockets must outlive them.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.requestTimeout = 0;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const urlHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${urlHost}:${address.port}`,
    port: address.port,
    server,
    close: async (drain) => {
      closing = true;
      for (const response of answering) {
        if (!response.headersSent) response.shouldKeepAlive = false;
      }
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      await drain?.();
      if (answering.size > 0) {
        let timer: NodeJS.Timeout | undefined;
        await new Promise<void>((resolve) => {
          allAnswered = resolve;
          timer = setTimeout(resolve, options.answerWaitMsMax ?? CLOSE_ANSWER_WAIT_MS_MAX);
        });
        clearTimeout(timer);
      }
      server.closeAllConnections();
      await closed;
    },
  };
}
