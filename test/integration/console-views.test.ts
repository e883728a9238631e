// Proves the console's views panel in a real browser (Debian's Chromium) against a spawned
// `tailbase start`: a declared view shows with its definition, its version and its lag per source
// partition (0 once caught up); while a redefinition is built beside it the row shows the new
// definition and the build's progress, which ends at the swap with the new version shown; the
// changes panel, following a view, shows the swap's reset line as a rebuild and forgets the rows
// of the old version it showed.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ViewDefinition } from '../../shared/view-definition.js';
import { spawnEmbedded, type SpawnedEmbedded } from '../harness/index.js';
import {
  CHROMIUM_INSTALLED,
  CHROMIUM_REQUIRED,
  ensureConsoleBuild,
  launchChromium,
  screenshotDir,
} from './console-browser.js';
import { call } from './gateway-harness.js';

const BROWSER_WAIT_MS = 30_000;
const ORDERS = 4_000;
// Small bulks and fetches: each fetch of a source partition takes one batch of a few records, so
// the redefinition's build takes some 200 rounds a partition (4-5 s on a loaded 2-core machine).
// With 1,000-record bulks it took 4 rounds (0.75-1.5 s), and a build that ends between two of the
// console's one-second polls never shows its progress.
const BULK_RECORDS = 10;
const BY_COUNTRY: ViewDefinition = {
  from: 'orders',
  groupBy: ['country'],
  aggregates: { orders: 'count()' },
};
const BY_STATUS: ViewDefinition = {
  from: 'orders',
  groupBy: ['status'],
  aggregates: { orders: 'count()' },
};
const shots = screenshotDir();

const browserTests = CHROMIUM_INSTALLED || CHROMIUM_REQUIRED ? describe : describe.skip;

browserTests('the console views panel in Chromium', () => {
  let browser: Browser;
  let node: SpawnedEmbedded;

  beforeAll(async () => {
    ensureConsoleBuild();
    browser = await launchChromium();
    node = await spawnEmbedded({
      partitions: 2,
      args: ['--view-fetch-bytes-max', '256', '--view-fetch-wait-ms', '50'],
    });
  });

  afterAll(async () => {
    await browser?.close();
    await node?.stop();
  });

  it('shows a declared view, its lag per partition, and a redefinition’s progress until the swap', async () => {
    const { url } = node;
    for (let from = 0; from < ORDERS; from += BULK_RECORDS) {
      const bulk = Array.from({ length: BULK_RECORDS }, (_, j) => ({
        key: `o${from + j}`,
        value: { country: ['FR', 'DE', 'JP'][j % 3], status: ['paid', 'open'][j % 2] },
      }));
      expect((await call(url, 'POST', '/v1/collections/orders/docs', bulk)).status).toBe(200);
    }
    const declared = await call(url, 'PUT', '/v1/views/by_country', BY_COUNTRY);
    expect(declared.status).toBe(200);

    const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    const page = await context.newPage();
    page.setDefaultTimeout(BROWSER_WAIT_MS);
    try {
      await page.goto(`${url}/`);
      const row = page.locator('[data-view="by_country"]');
      await row.locator('[data-col="definition"]', { hasText: '"groupBy":["country"]' }).waitFor();
      await row
        .locator('[data-col="version"]', { hasText: new RegExp(`^${declared.body.version}$`) })
        .waitFor();
      // Caught up: each source partition's lag reads 0.
      for (const partition of [0, 1]) {
        await row
          .locator(`[data-partition="${partition}"]`, { hasText: `orders/${partition}: 0` })
          .waitFor();
      }

      const redefined = await call(url, 'PUT', '/v1/views/by_country', BY_STATUS);
      expect(redefined.status).toBe(200);
      const progress = row.locator('[data-col="rebuild"] progress');
      await progress.waitFor();
      await row.locator('[data-col="rebuild"]', { hasText: '"groupBy":["status"]' }).waitFor();
      await row.locator('[data-col="rebuild-progress"]', { hasText: / of \d+$/ }).waitFor();
      await page.screenshot({ path: `${shots}/console-views-rebuilding.png` });
      // The swap: the new definition serves and no build is left.
      await row.locator('[data-col="definition"]', { hasText: '"groupBy":["status"]' }).waitFor();
      await progress.waitFor({ state: 'detached' });
      const info = await call(url, 'GET', '/v1/views/by_country');
      await row
        .locator('[data-col="version"]', { hasText: new RegExp(`^${info.body.version}$`) })
        .waitFor();
      await page.screenshot({ path: `${shots}/console-views-swapped.png` });
    } finally {
      await context.close();
    }
  });

  it('shows a view’s reset line in the changes panel and forgets the old version’s rows', async () => {
    const { url } = node;
    // A small source: the rebuilt version's output is a few lines, so the reset stays in the list.
    const notes = (keys: string[], kind: string, shade: string) =>
      call(
        url,
        'POST',
        '/v1/collections/notes/docs',
        keys.map((key) => ({ key, value: { kind, shade } })),
      );
    expect((await notes(['n1', 'n2'], 'memo', 'red')).status).toBe(200);
    const byKind = { from: 'notes', groupBy: ['kind'], aggregates: { n: 'count()' } };
    expect((await call(url, 'PUT', '/v1/views/by_kind', byKind)).status).toBe(200);

    const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    const page = await context.newPage();
    page.setDefaultTimeout(BROWSER_WAIT_MS);
    try {
      await page.goto(`${url}/`);
      const changes = page.locator('ol.changes li');
      await page.locator('#changes-collection').selectOption('by_kind');
      await Promise.all([
        page.waitForResponse((r) => r.url().includes('/v1/changes')),
        page.getByRole('button', { name: 'Follow changes' }).click(),
      ]);
      expect((await notes(['n3'], 'memo', 'red')).status).toBe(200);
      await changes.filter({ hasText: '["memo"]' }).first().waitFor();

      const redefined = await call(url, 'PUT', '/v1/views/by_kind', {
        ...byKind,
        groupBy: ['shade'],
      });
      expect(redefined.status).toBe(200);
      const reset = changes.filter({ hasText: 'view rebuilt as version' });
      await reset.waitFor();
      const { version } = (await call(url, 'GET', '/v1/views/by_kind')).body as { version: number };
      expect(await reset.textContent()).toBe(
        `by_kind view rebuilt as version ${version}: what came before is replaced`,
      );
      await changes.filter({ hasText: '["red"]' }).first().waitFor();
      expect(await changes.filter({ hasText: '["memo"]' }).count()).toBe(0);
      expect(await changes.filter({ hasText: 'rebuilt' }).count()).toBe(1);
      await page
        .locator('section', { has: page.getByRole('heading', { name: 'Changes' }) })
        .screenshot({ path: `${shots}/console-changes-reset.png` });
    } finally {
      await context.close();
    }
  });
});
