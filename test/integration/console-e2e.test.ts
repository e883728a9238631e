// Proves the web console works in a real browser (Debian's Chromium) against a spawned
// `tailbase start`: the status updates live after a write (one row a collection, expandable to
// its partitions), a search shows its highlight and
// passes filter/sort/facets through, a key read, the live change feed, a rebuild runs to its
// end, settings save; with one collection, a query typed with Enter needs no collection picked
// by hand; with API keys the console asks for one, refuses a wrong one, works with the
// right one and keeps it only in the tab's sessionStorage. Nothing is loaded from outside the
// gateway, and the page and assets have their content types and cache headers.
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnEmbedded, type SpawnedEmbedded } from '../harness/index.js';
import {
  CHROMIUM_INSTALLED,
  CHROMIUM_REQUIRED,
  ensureConsoleBuild,
  launchChromium,
  screenshotDir,
} from './console-browser.js';

const BROWSER_WAIT_MS = 30_000;
const REBUILD_WAIT_MS = 90_000;
const shots = screenshotDir();

/** Opens the console with every request outside the gateway refused and recorded. */
async function openConsole(browser: Browser, url: string) {
  const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(BROWSER_WAIT_MS);
  const outside: string[] = [];
  const errors: string[] = [];
  await page.route('**/*', (route) => {
    if (route.request().url().startsWith(url)) return route.continue();
    outside.push(route.request().url());
    return route.abort();
  });
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error' && /Content Security Policy/.test(message.text())) {
      errors.push(message.text());
    }
  });
  await page.goto(`${url}/`);
  return { context, page, outside, errors };
}

/** Expands a collection's row of the status (or the internal topics' row) to its partitions. */
async function expand(page: Page, collection: string) {
  const button = page.locator(`[data-collection="${collection}"] button.expand`);
  await button.click();
  await page
    .locator(`[data-collection="${collection}"] button.expand[aria-expanded="true"]`)
    .waitFor();
}

/** Waits until the status table's row shows these cells at once (the page polls; no reload). */
async function waitForRow(page: Page, row: string, cells: Record<string, string>) {
  let located = page.locator(`[data-row="${row}"]`);
  for (const [column, text] of Object.entries(cells)) {
    located = located.filter({
      has: page.locator(`[data-col="${column}"]`, { hasText: new RegExp(`^${text}$`) }),
    });
  }
  await located.waitFor();
}

async function put(url: string, collection: string, key: string, value: unknown) {
  const response = await fetch(`${url}/v1/collections/${collection}/docs/${key}`, {
    method: 'PUT',
    body: JSON.stringify(value),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as { partition: number; offset: number };
}

const browserTests = CHROMIUM_INSTALLED || CHROMIUM_REQUIRED ? describe : describe.skip;

browserTests('the console in Chromium', () => {
  let browser: Browser;
  let node: SpawnedEmbedded;

  beforeAll(async () => {
    ensureConsoleBuild();
    browser = await launchChromium();
    node = await spawnEmbedded({ partitions: 1 });
  });

  afterAll(async () => {
    await browser?.close();
    await node?.stop();
  });

  it('serves the page and its assets with content types and cache headers', async () => {
    const page = await fetch(`${node.url}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('cache-control')).toBe('no-cache');
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    const html = await page.text();
    const assets = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]);
    expect(assets.some((asset) => asset.endsWith('.js'))).toBe(true);
    expect(assets.some((asset) => asset.endsWith('.css'))).toBe(true);
    for (const asset of assets) {
      const response = await fetch(`${node.url}${asset}`);
      expect(response.status).toBe(200);
      const type = asset.endsWith('.js') ? 'text/javascript' : 'text/css';
      expect(response.headers.get('content-type')).toBe(`${type}; charset=utf-8`);
      expect(response.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    }
    const missing = await fetch(`${node.url}/assets/missing.js`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe('not_found');
    expect((await fetch(`${node.url}/`, { method: 'POST' })).status).toBe(405);
  });

  it('shows live status, search with highlights, a key read, changes, a rebuild and settings', async () => {
    const { context, page, outside, errors } = await openConsole(browser, node.url);
    try {
      await page.getByRole('heading', { name: 'tailbase console' }).waitFor();
      // Internal topics are one collapsed row; expanded, their partitions show.
      await expand(page, 'internal topics');
      await page.locator('[data-row="__tailbase_settings/0/0"]').waitFor();
      expect(await page.locator('[data-row^="books/"]').count()).toBe(0);

      // A write shows in the status without a reload: one row for the collection, and expanded,
      // the log end and what the node applied.
      await put(node.url, 'books', 'b1', { title: 'The quick brown fox', year: 1999 });
      await page
        .locator('[data-collection="books"] [data-col="end"]', { hasText: /^1$/ })
        .waitFor();
      expect(await page.locator('[data-row^="books/"]').count()).toBe(0);
      await expand(page, 'books');
      await waitForRow(page, 'books/0/0', { end: '1', applied: '1', lag: '0' });
      const bulk = Array.from({ length: 500 }, (_, i) => ({
        key: `n${i}`,
        value: { title: `note ${i}` },
      }));
      const response = await fetch(`${node.url}/v1/collections/books/docs`, {
        method: 'POST',
        body: JSON.stringify(bulk),
      });
      expect(response.status).toBe(200);
      await waitForRow(page, 'books/0/0', { end: '501', applied: '501', lag: '0' });
      await page
        .locator('section', { has: page.getByRole('heading', { name: 'Status' }) })
        .screenshot({ path: path.join(shots, 'console-status.png') });

      // Search: the match is marked in the hit's highlights.
      await page.getByLabel('Collection', { exact: true }).first().fill('books');
      await page.getByLabel('Search for').fill('fox');
      await page.getByRole('button', { name: 'Search', exact: true }).click();
      const mark = page.locator('ol.hits mark');
      await mark.first().waitFor();
      expect(await mark.first().textContent()).toBe('fox');
      expect(await page.locator('ol.hits li strong').first().textContent()).toBe('b1');
      const query = page.locator('section', { has: page.getByRole('heading', { name: 'Query' }) });
      await query.screenshot({ path: path.join(shots, 'console-search.png') });

      // filter, sort and facets go to the gateway as typed, whatever it answers yet.
      await page.getByLabel('Filter').fill('year > 1990');
      await page.getByLabel('Sort').fill('year:desc');
      await page.getByLabel('Facets').fill('year');
      const [request] = await Promise.all([
        page.waitForRequest((r) => r.url().includes('/search?')),
        page.getByRole('button', { name: 'Search', exact: true }).click(),
      ]);
      const params = new URL(request.url()).searchParams;
      expect(params.get('filter')).toBe('year > 1990');
      expect(params.get('sort')).toBe('year:desc');
      expect(params.get('facets')).toBe('year');
      expect(params.get('highlight')).toBe('true');
      await page.getByLabel('Filter').fill('');
      await page.getByLabel('Sort').fill('');
      await page.getByLabel('Facets').fill('');

      // A key read.
      await page.getByLabel('Get by key').check();
      await page.getByLabel('Key', { exact: true }).fill('b1');
      await page.getByRole('button', { name: 'Get', exact: true }).click();
      await page.locator('.answer pre', { hasText: 'The quick brown fox' }).waitFor();

      // The change feed, from once its stream has opened.
      const [feed] = await Promise.all([
        page.waitForResponse((r) => r.url().includes('/v1/changes')),
        page.getByRole('button', { name: 'Follow changes' }).click(),
      ]);
      expect(feed.status()).toBe(200);
      await put(node.url, 'books', 'b2', { title: 'A slow turtle' });
      await page.locator('ol.changes li', { hasText: 'b2' }).waitFor();
      expect(await page.locator('ol.changes li').first().textContent()).toContain('books/0@501');
      await page
        .locator('section', { has: page.getByRole('heading', { name: 'Changes' }) })
        .screenshot({ path: path.join(shots, 'console-changes.png') });
      await page.getByRole('button', { name: 'Stop following' }).click();
      await page.getByRole('button', { name: 'Follow changes' }).waitFor();

      // A rebuild runs to its end, and the node has every record again.
      await page.getByRole('button', { name: 'Rebuild serve-node 0' }).click();
      await page.getByRole('button', { name: 'Confirm rebuild' }).click();
      await page
        .getByText(/^Rebuilt serve-node 0: \d+ records in/)
        .waitFor({ timeout: REBUILD_WAIT_MS });
      await waitForRow(page, 'books/0/0', { end: '502', applied: '502', lag: '0' });
      await page
        .locator('table', { has: page.getByText('Serve-nodes') })
        .screenshot({ path: path.join(shots, 'console-rebuild.png') });

      // Settings save, and answer as the gateway took them.
      await page.locator('#settings-collection').fill('books');
      await page.getByLabel('Settings (JSON)').fill('{"searchable": ["title"]}');
      await page.getByRole('button', { name: 'Save' }).click();
      await page.getByText('Saved the settings of books.').waitFor();
      const saved = JSON.parse(await page.getByLabel('Settings (JSON)').inputValue());
      expect(saved).toMatchObject({ searchable: ['title'], cleanupPolicy: 'compact' });

      // With year filterable, a filtered, sorted, faceted search answers its facets as counts and
      // a range (the console carries the settings write's token, so the re-index is waited for).
      await put(node.url, 'books', 'b3', { title: 'A fox in winter', year: 1984 });
      await page
        .getByLabel('Settings (JSON)')
        .fill('{"searchable": ["title"], "filterable": ["year"], "sortable": ["year"]}');
      await page.getByRole('button', { name: 'Save' }).click();
      await page.getByText('Saved the settings of books.').waitFor();
      await page.getByRole('radio', { name: 'Search' }).check();
      await page.getByLabel('Search for').fill('fox');
      await page.getByLabel('Filter').fill('year > 1980');
      await page.getByLabel('Sort').fill('year:asc');
      await page.getByLabel('Facets').fill('year');
      await page.getByRole('button', { name: 'Search', exact: true }).click();
      const facet = page.locator('[data-facet="year"] dd');
      await facet.waitFor();
      expect(await facet.textContent()).toBe('1984 (1), 1999 (1); from 1984 to 1999');
      expect(await page.locator('ol.hits li strong').allTextContents()).toEqual(['b3', 'b1']);

      await page.screenshot({ path: path.join(shots, 'console-page.png'), fullPage: true });
      expect(outside).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  }, 180_000);

  it('with one collection, a query typed with Enter finds a fresh write; a collection is dropped', async () => {
    const { context, page, errors } = await openConsole(browser, node.url);
    try {
      await page.locator('.version', { hasText: /^tailbase \d+\.\d+\.\d+/ }).waitFor();
      await page.locator('[data-collection="books"] [data-col="state"]').waitFor();
      const word = `kinkajou${Date.now().toString(36)}`;
      const written = await fetch(`${node.url}/v1/collections/books/docs/fresh?wait=applied`, {
        method: 'PUT',
        body: JSON.stringify({ title: `a ${word} at night` }),
      });
      expect(written.status).toBe(200);
      // Nothing is picked by hand: the only collection is already in the box.
      const box = page.getByLabel('Collection', { exact: true }).first();
      await expect.poll(() => box.inputValue(), { timeout: BROWSER_WAIT_MS }).toBe('books');
      await page.getByLabel('Search for').fill(word);
      await page.getByLabel('Search for').press('Enter');
      await page.locator('ol.hits li strong', { hasText: /^fresh$/ }).waitFor();

      // Each collection's row counts its documents and bytes on disk (each part in the
      // tooltip); one is dropped from its row.
      await page
        .locator('[data-collection="books"] [data-col="documents"]', { hasText: /^\d+$/ })
        .waitFor();
      const onDisk = page.locator('[data-collection="books"] [data-col="bytes"]', {
        hasText: /^\d+(\.\d+)? (B|KiB|MiB)$/,
      });
      await onDisk.waitFor();
      expect(await onDisk.getAttribute('title')).toMatch(
        /^log \d\S* \S+, LMDB \d\S* \S+, SQLite \d\S* \S+$/,
      );
      expect((await put(node.url, 'scratch', 's1', { x: 1 })).offset).toBe(0);
      await page.getByRole('button', { name: 'Drop scratch' }).click();
      await page.getByRole('button', { name: 'Confirm drop' }).click();
      await page.locator('[data-collection="scratch"]').waitFor({ state: 'detached' });
      const listed = (await fetch(`${node.url}/v1/collections`).then((r) => r.json())) as {
        collections: { collection: string }[];
      };
      expect(listed.collections.map((c) => c.collection)).toEqual(['books']);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  }, 120_000);
});

browserTests('the console with API keys', () => {
  const KEY = 'console-test-key-7c1e';
  let browser: Browser;
  let node: SpawnedEmbedded;

  beforeAll(async () => {
    ensureConsoleBuild();
    browser = await launchChromium();
    node = await spawnEmbedded({ partitions: 1, args: ['--api-keys', `${KEY}:admin`] });
  });

  afterAll(async () => {
    await browser?.close();
    await node?.stop();
  });

  it('asks for a key, refuses a wrong one, works with the right one kept only in sessionStorage', async () => {
    const { context, page, outside } = await openConsole(browser, node.url);
    try {
      const keyBox = page.getByLabel('API key', { exact: true });
      await keyBox.waitFor();
      await keyBox.fill('not-the-key');
      await page.getByRole('button', { name: 'Use key' }).click();
      await page.getByRole('alert').filter({ hasText: 'The gateway refused that key.' }).waitFor();
      expect(await page.evaluate("sessionStorage.getItem('tailbase.apiKey')")).toBeNull();
      await page
        .locator('section', { has: page.getByRole('heading', { name: 'API key required' }) })
        .screenshot({ path: path.join(shots, 'console-api-key.png') });

      await keyBox.fill(KEY);
      await page.getByRole('button', { name: 'Use key' }).click();
      await page.locator('[data-collection="internal topics"]').waitFor();
      const stored = await page.evaluate(
        "({ session: sessionStorage.getItem('tailbase.apiKey'), local: localStorage.length, cookie: document.cookie })",
      );
      expect(stored).toEqual({ session: KEY, local: 0, cookie: '' });
      expect(await context.cookies()).toEqual([]);

      // The tab keeps it across a reload; another tab (a new session) asks again.
      await page.reload();
      await page.locator('[data-collection="internal topics"]').waitFor();
      const other = await openConsole(browser, node.url);
      await other.page.getByLabel('API key', { exact: true }).waitFor();
      await other.context.close();

      await page.getByRole('button', { name: 'Forget API key' }).click();
      await keyBox.waitFor();
      expect(await page.evaluate('sessionStorage.length')).toBe(0);
      expect(outside).toEqual([]);
    } finally {
      await context.close();
    }
  }, 120_000);
});
