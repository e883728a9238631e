// Filters, sorting and facets (filters-suite.ts) over `tailbase start` as a user runs it.
import { describe, expect, it } from 'vitest';
import { spawnEmbedded } from '../harness/index.js';
import { embeddedTarget } from './api-suite.js';
import { describeFilters } from './filters-suite.js';

describeFilters('filters, sorts and facets over tailbase start', () => embeddedTarget(4));

describe('the filter limits are flags', () => {
  it('--filter-conditions-max bounds a filter, naming the limit, and changes nothing', async () => {
    const embedded = await spawnEmbedded({ args: ['--filter-conditions-max', '2'] });
    try {
      const base = `${embedded.url}/v1/collections/limited/search?q=x&filter=`;
      const two = await fetch(base + encodeURIComponent('a = 1 AND b = 2'));
      // Within the bound, the filter reaches the serve-node, which names the undeclared field.
      expect(((await two.json()) as { error: { code: string } }).error.code).toBe(
        'field_not_filterable',
      );
      const three = await fetch(base + encodeURIComponent('a = 1 AND b = 2 AND c = 3'));
      expect(three.status).toBe(400);
      const { error } = (await three.json()) as { error: Record<string, unknown> };
      expect(error.code).toBe('invalid_filter');
      expect(error.message).toMatch(/2/);
      expect(error.limit).toBeDefined();
    } finally {
      await embedded.stop();
    }
  });
});
