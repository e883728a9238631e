/**
 * The log-node's HTTP routes for operators (documented in log-node/README.md): health, readiness,
 * what it stores, a cleaner pass on demand, and the single-batch append the `log` benchmark drives
 * with wrk. Clients reach the log by the Kafka protocol (log-node/kafka/), not here.
 */
import { Hono } from 'hono';
import { badRequest, TailbaseError } from '../shared/errors.js';
import { readBodyBytes } from '../shared/http-body.js';
import { installErrorHandlers, requireClusterSecret } from '../shared/http-server.js';
import type { Logger } from '../shared/logger.js';
import type { LogCleaner } from './log-cleaner.js';
import type { LogNode } from './log-node.js';

export function createLogNodeApp(node: LogNode, cleaner: LogCleaner, logger: Logger): Hono {
  const app = new Hono();
  const { config } = node;
  installErrorHandlers(app, logger);

  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  app.get('/readyz', (c) => {
    const failed = node.failedPartitions();
    if (node.closing || failed.length > 0) {
      return c.json({ status: 'not_ready', failedPartitions: failed }, 503);
    }
    return c.json({ status: 'ready' });
  });

  app.use('/internal/*', requireClusterSecret(config.clusterSecret));

  app.get('/internal/cluster', (c) => c.json(node.clusterInfo()));
  app.get('/internal/topics', (c) => c.json({ topics: node.topics() }));

  app.get('/internal/offsets', (c) => c.json({ partitions: node.offsets() }));
  app.get('/internal/status', (c) => c.json(node.status()));
  app.post('/internal/admin/clean', async (c) => c.json({ partitions: await cleaner.runOnce() }));

  const batchTooLarge = (actual?: number) =>
    new TailbaseError(413, 'batch_too_large', 'batch exceeds batchBytesMax', {
      limit: 'batchBytesMax',
      max: config.batchBytesMax,
      ...(actual === undefined ? {} : { actual }),
    });
  app.post('/internal/topics/:topic/partitions/:partition/append', async (c) => {
    const body = await readBodyBytes(c, config.batchBytesMax, batchTooLarge);
    if (body.length === 0) {
      throw badRequest('invalid_batch', 'the request body must be one encoded batch');
    }
    const log = node.appendTarget(c.req.param('topic'), c.req.param('partition'), body);
    return c.json(await log.append(body));
  });

  return app;
}
