/**
 * The reference HTTP server: a bare hono handler that reads the request body and answers a small
 * JSON object, the least any tailbase endpoint must do. Run as its own process: `node
 * dist/bench/bare-hono-server.js PORT`.
 */
import { Hono } from 'hono';
import { listen } from '../shared/http-server.js';

const port = Number(process.argv[2] ?? 0);
const app = new Hono();
app.get('/healthz', (c) => c.json({ ok: true }));
app.post('/echo', async (c) => {
  const body = await c.req.arrayBuffer();
  return c.json({ bytes: body.byteLength });
});
const listener = await listen(app, '127.0.0.1', port);
const shutdown = () => void listener.close().then(() => process.exit(0));
process.once('SIGTERM', shutdown);
process.once('SIGINT', shutdown);
