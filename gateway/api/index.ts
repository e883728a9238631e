/**
 * The public API's declarations: constants, body shapes, query parameters, routes and the
 * OpenAPI document built from them. The typed client imports types from here (and constants.ts
 * at run time); the gateway registers its routes from API_ROUTES.
 */
export * from './constants.js';
export * from './shapes.js';
export * from './params.js';
export * from './declare.js';
export { API_ROUTES, type ApiRouteName } from './routes.js';
export { API_VERSION, openApiDocument } from './openapi.js';
