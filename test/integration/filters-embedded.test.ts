// Filters, sorting and facets (filters-suite.ts) over `tailbase start` as a user runs it.
import { embeddedTarget } from './api-suite.js';
import { describeFilters } from './filters-suite.js';

describeFilters('filters, sorts and facets over tailbase start', () => embeddedTarget(4));
