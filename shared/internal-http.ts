/**
 * HTTP between nodes, on node:http with a keep-alive agent. Node's fetch (undici through the web
 * API) did 1,250-3,900 requests/s here where node:http did 9,600-13,100, and every gateway write
 * and read is one internal call, so the internal clients use this instead.
 */
import http from 'node:http';
import { TailbaseError } from './errors.js';

/** Sockets kept per node; bounds the concurrent calls one client makes to one node. */
export const INTERNAL_SOCKETS_MAX = 256;

export interface InternalResponse {
  status: number;
  ok: boolean;
  header(name: string): string | undefined;
  body: Buffer;
  /** The body parsed as JSON, or null when it is not JSON. */
  json(): unknown;
}

export interface InternalRequest {
  method?: string;
  headers?: Record<string, string>;
  body?: Uint8Array | string;
  signal?: AbortSignal;
  /**
   * Past this without the answer's headers the call fails as the peer unreachable: a node that
   * hangs is as good as down. The body, once started, is not bounded by it.
   */
  timeoutMs?: number;
}

/**
 * True when the call failed because the peer refused the connection, so no byte of the request
 * reached it. TCP reports ECONNREFUSED only for a reset answering its connect, before the socket
 * is established; a connection that drops after the request left fails as ECONNRESET, a hang up
 * or a timeout, and the peer may have acted on it. Read from the cause, which never leaves this
 * process, rather than from details, which travel in error bodies: no peer's answer can claim it.
 */
export function connectionRefused(error: unknown): boolean {
  if (!(error instanceof TailbaseError) || !error.code.endsWith('_unreachable')) return false;
  return (error.cause as NodeJS.ErrnoException | undefined)?.code === 'ECONNREFUSED';
}

export class InternalHttp {
  readonly url: string;
  private readonly agent: http.Agent;
  private readonly headers: Record<string, string>;
  private readonly peer: string;

  /** `peer` names the kind of node in errors: `serve-node`, `gateway`. */
  constructor(url: string, peer: string, headers: Record<string, string> = {}) {
    this.url = url.replace(/\/+$/, '');
    this.peer = peer;
    this.headers = headers;
    this.agent = new http.Agent({ keepAlive: true, maxSockets: INTERNAL_SOCKETS_MAX });
  }

  request(path: string, options: InternalRequest = {}): Promise<InternalResponse> {
    return new Promise((resolve, reject) => {
      const body = options.body;
      const headers: Record<string, string> = { ...this.headers, ...options.headers };
      if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
      const request = http.request(this.url + path, {
        method: options.method ?? 'GET',
        headers,
        agent: this.agent,
        signal: options.signal,
      });
      request.on('response', (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', (error) => reject(this.unreachable(error)));
        response.on('end', () => {
          const bytes = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
          const status = response.statusCode ?? 0;
          resolve({
            status,
            ok: status >= 200 && status < 300,
            header: (name) => {
              const value = response.headers[name.toLowerCase()];
              return Array.isArray(value) ? value[0] : value;
            },
            body: bytes,
            json: () => {
              try {
                return JSON.parse(bytes.toString('utf8')) as unknown;
              } catch {
                return null;
              }
            },
          });
        });
      });
      request.on('error', (error) => {
        if (error.name === 'AbortError') reject(error);
        else reject(this.unreachable(error));
      });
      const { timeoutMs } = options;
      if (timeoutMs !== undefined) {
        const timer = setTimeout(() => {
          request.destroy(new Error(`no answer within ${timeoutMs} ms`));
        }, timeoutMs);
        // The bound is on the answer starting: a large body may take longer to arrive.
        request.once('response', () => clearTimeout(timer));
        request.once('close', () => clearTimeout(timer));
      }
      request.end(body);
    });
  }

  /**
   * The message names no address: it may travel on to a client of the gateway. The address is in
   * the cause, which is logged (and read by `connectionRefused`, never sent on).
   */
  private unreachable(cause: Error): TailbaseError {
    const code = `${this.peer.replace(/-node$/, '')}_unreachable`;
    return new TailbaseError(
      503,
      code,
      `a ${this.peer} is unreachable; retry later`,
      {},
      { cause },
    );
  }

  close(): void {
    this.agent.destroy();
  }
}
