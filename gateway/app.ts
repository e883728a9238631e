/**
 * The gateway's hono app: every public route of DESIGN.md, behind request observability and
 * API-key scopes, with one error mapping (shared/http-server.ts) so no stack trace reaches a
 * client. Routes are registered per area in routes/; a known path with the wrong method is 405.
 */
import { Hono } from 'hono';
import { installErrorHandlers } from '../shared/http-server.js';
import { createScopeGuard } from './auth.js';
import { consoleRoutes } from './console.js';
import { declaredRoutes } from './routes/declared.js';
import { observe } from './observe.js';
import { collectionRoutes } from './routes/collections.js';
import { docRoutes } from './routes/docs.js';
import { opsRoutes } from './routes/ops.js';
import { queryRoutes } from './routes/query.js';
import { viewRoutes } from './routes/views.js';
import type { GatewayServices } from './services.js';

export function createGatewayApp(services: GatewayServices): Hono {
  const app = new Hono();
  installErrorHandlers(app, services.logger);
  app.use('*', observe(services.logger, services.metrics));
  const guard = createScopeGuard(services.config.apiKeys);
  docRoutes(app, services, guard);
  queryRoutes(app, services, guard);
  opsRoutes(app, services, guard);
  collectionRoutes(app, services, guard);
  viewRoutes(app, services, guard);
  consoleRoutes(declaredRoutes(app, guard));
  // Every path the routes registered (not the middleware's wildcard), so none is left out.
  const known = new Set(app.routes.map((route) => route.path).filter((p) => !p.includes('*')));
  for (const path of known) {
    app.all(path, (c) =>
      c.json(
        {
          error: {
            code: 'method_not_allowed',
            message: `${c.req.method} is not allowed on ${path}`,
          },
        },
        405,
      ),
    );
  }
  return app;
}
