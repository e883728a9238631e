export * from './ast.js';
export * from './evaluate.js';
export * from './facts.js';
export { FilterError, type FilterErrorCode } from './filter-error.js';
export * from './limits.js';
export * from './parse.js';
export * from './print.js';
