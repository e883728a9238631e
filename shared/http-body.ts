/**
 * Reads a request body with a byte bound. A body with a declared length is read through
 * @hono/node-server's direct path (no web ReadableStream: hono's bodyLimit, which wraps the body
 * in one, cost more CPU than a whole single-record append); a chunked body is counted as it
 * streams in and cut off past the bound.
 */
import type { Context } from 'hono';

export async function readBodyBytes(
  c: Context,
  bytesMax: number,
  tooLarge: (actualBytes?: number) => Error,
): Promise<Buffer> {
  const declaredHeader = c.req.header('content-length');
  if (declaredHeader !== undefined) {
    const declared = Number(declaredHeader);
    if (!(declared <= bytesMax)) throw tooLarge(Number.isFinite(declared) ? declared : undefined);
    return Buffer.from(await c.req.arrayBuffer());
  }
  const body = c.req.raw.body;
  if (body === null) return Buffer.alloc(0);
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > bytesMax) {
      await reader.cancel();
      throw tooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks, total);
}
