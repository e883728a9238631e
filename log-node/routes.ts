/**
 * The log-node's HTTP routes for operators (documented in log-node/README.md): health, readiness,
 * its cluster, the offsets and status of what it stores, and a cleaner pass on demand. Clients
 * reach the log by the Kafka protocol (log-node/kafka/) only: nothing here appends or reads.
 */
import { Hono } from 'hono';
import { installErrorHandlers, requireClusterSecret } from '../shared/http-server.js';
import type { Logger } from '../shared/logger.js';
import type { LogCleaner } from './log-cleaner.js';
import type { LogNode } from './log-node.js';

export function createLogNodeApp(node: LogNode, cleaner: LogCleaner, logger: Logger): Hono {
  const app = new Hono();
  installErrorHandlers(app, logger);

  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  app.get('/readyz', (c) => {
    const failed = node.failedPartitions();
    if (node.closing || failed.length > 0) {
      return c.json({ status: 'not_ready', failedPartitions: failed }, 503);
    }
    return c.json({ status: 'ready' });
  });

  app.use('/internal/*', requireClusterSecret(node.config.clusterSecret));

  app.get('/internal/cluster', (c) => c.json(node.clusterInfo()));
  app.get('/internal/offsets', (c) => c.json({ partitions: node.offsets() }));
  app.get('/internal/status', (c) => c.json(node.status()));
  app.post('/internal/admin/clean', async (c) => c.json({ partitions: await cleaner.runOnce() }));

  return app;
}
