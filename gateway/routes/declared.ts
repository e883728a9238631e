/**
 * Registers a handler for a declared route (gateway/api/routes.ts): its method and path as
 * declared, behind the API-key scope it declares, so what /openapi.json says is what is served.
 */
import type { Handler, Hono } from 'hono';
import { honoPath, type RouteDeclaration } from '../api/declare.js';
import type { ScopeGuard } from '../auth.js';

export type DeclaredRoutes = (route: RouteDeclaration, handler: Handler) => void;

export function declaredRoutes(app: Hono, guard: ScopeGuard): DeclaredRoutes {
  return (route, handler) => {
    const path = honoPath(route.path);
    const required = route.scope === undefined ? null : guard(route.scope);
    if (required === null) app.on(route.method.toUpperCase(), path, handler);
    else app.on(route.method.toUpperCase(), path, required, handler);
  };
}
