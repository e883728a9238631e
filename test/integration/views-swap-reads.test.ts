// Proves reads that span a view's swap, on `tailbase start`: a change feed of the view follows the
// serving version (a reset line at the swap, then the new version from its start, every event
// named by the view); a feed resumed with a token of the old version gets the reset line first,
// then the new version; a scan cursor issued before the swap is a 409 `cursor_stale`.
import { afterEach, describe, expect, it } from 'vitest';
import type { ViewDefinition } from '../../shared/view-definition.js';
import { freePort } from '../harness/free-port.js';
import { sleep, type SpawnedNode } from '../harness/spawn-node.js';
import { tempDir, type TempDir } from '../harness/temp-dir.js';
import { call } from './gateway-harness.js';
import { caughtUpView, startWithViews } from './view-harness.js';

const PARTITIONS = 2;
const ORDERS = 40;
const WAIT_MS_MAX = 30_000;
const POLL_MS = 50;
const BY_COUNTRY: ViewDefinition = {
  from: 'orders',
  groupBy: ['country'],
  aggregates: { orders: 'count()' },
};
/** The redefinition: every document it makes has a `status`, none of the first one's does. */
const BY_COUNTRY_STATUS: ViewDefinition = {
  from: 'orders',
  groupBy: ['country', 'status'],
  aggregates: { orders: 'count()' },
};

interface FeedLine {
  collection: string;
  key?: string;
  value?: Record<string, unknown>;
  reset?: boolean;
  version?: number;
  token: string;
}

let node: SpawnedNode | undefined;
let dir: TempDir | undefined;

afterEach(async () => {
  await node?.kill();
  dir?.cleanup();
  node = undefined;
});

/** A change feed read line by line into `lines` until `stop` aborts. */
function openFeed(
  url: string,
  query: string,
  stop: AbortController,
): { lines: FeedLine[]; done: Promise<void> } {
  const lines: FeedLine[] = [];
  const done = (async () => {
    const response = await fetch(`${url}/v1/changes?${query}`, { signal: stop.signal });
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let buffered = '';
    try {
      for (;;) {
        const { value, done: ended } = await reader.read();
        if (ended) return;
        buffered += decoder.decode(value, { stream: true });
        const parts = buffered.split('\n');
        buffered = parts.pop()!;
        for (const part of parts) if (part !== '') lines.push(JSON.parse(part) as FeedLine);
      }
    } catch (error) {
      if (!stop.signal.aborted) throw error;
    }
  })();
  return { lines, done };
}

async function until(what: string, done: () => boolean | Promise<boolean>): Promise<void> {
  for (let waited = 0; waited < WAIT_MS_MAX; waited += POLL_MS) {
    if (await done()) return;
    await sleep(POLL_MS);
  }
  throw new Error(`${what}: not within ${WAIT_MS_MAX} ms`);
}

describe('reads across a view swap', () => {
  it('the feed follows the serving version, a resumed old token resets, a stale cursor is a 409', async () => {
    dir = tempDir('views-swap-reads');
    node = await startWithViews(dir.path, await freePort(), PARTITIONS);
    const { url } = node;
    const orders = Array.from({ length: ORDERS }, (_, i) => ({
      key: `o${i}`,
      value: { country: ['FR', 'DE', 'JP'][i % 3], status: ['paid', 'open'][i % 2] },
    }));
    expect((await call(url, 'POST', '/v1/collections/orders/docs', orders)).status).toBe(200);
    expect((await call(url, 'PUT', '/v1/views/by_country', BY_COUNTRY)).status).toBe(200);
    const first = await caughtUpView(url, 'by_country');
    expect(first.size).toBe(3);

    const stop = new AbortController();
    const live = openFeed(url, 'collection=by_country', stop);
    await until('the old version in the feed', () => live.lines.length >= 3);
    const oldToken = live.lines[0].token;
    const page = await call(
      url,
      'GET',
      '/v1/collections/by_country/docs?limit=1&consistency=strong',
    );
    expect(page.status).toBe(200);
    const staleCursor = page.body.cursor as string;
    // The same version: the cursor goes on.
    const next = await call(
      url,
      'GET',
      `/v1/collections/by_country/docs?limit=1&cursor=${staleCursor}`,
    );
    expect(next.status).toBe(200);

    const before = (await call(url, 'GET', '/v1/views/by_country')).body.version as number;
    expect((await call(url, 'PUT', '/v1/views/by_country', BY_COUNTRY_STATUS)).status).toBe(200);
    await until('the swap', async () => {
      const info = (await call(url, 'GET', '/v1/views/by_country')).body;
      return info.version !== before && info.rebuild == null;
    });
    const after = await caughtUpView(url, 'by_country');
    expect(after.size).toBe(6);

    const stale = await call(
      url,
      'GET',
      `/v1/collections/by_country/docs?limit=1&cursor=${staleCursor}`,
    );
    expect(stale.status).toBe(409);
    expect(stale.body.error.code).toBe('cursor_stale');

    await until('the new version in the feed', () => {
      if (process.env.DEBUG_FEED) console.log(JSON.stringify(live.lines.slice(-3)));
      const at = live.lines.findIndex((line) => line.reset === true);
      return at >= 0 && live.lines.length - at - 1 >= after.size;
    });
    stop.abort();
    await live.done;
    const at = live.lines.findIndex((line) => line.reset === true);
    expect(live.lines.every((line) => line.collection === 'by_country')).toBe(true);
    expect(live.lines.slice(0, at).every((line) => !('status' in line.value!))).toBe(true);
    const newer = live.lines.slice(at + 1);
    expect(newer.every((line) => 'status' in line.value!)).toBe(true);
    expect(new Set(newer.map((line) => line.key))).toEqual(new Set(after.keys()));
    expect(live.lines.filter((line) => line.reset === true)).toHaveLength(1);

    const resumedStop = new AbortController();
    const resumed = openFeed(
      url,
      `collection=by_country&token=${oldToken}&limit=${after.size}`,
      resumedStop,
    );
    await resumed.done;
    expect(resumed.lines[0]).toMatchObject({ collection: 'by_country', reset: true });
    const replayed = resumed.lines.slice(1);
    expect(replayed).toHaveLength(after.size);
    expect(replayed.every((line) => 'status' in line.value!)).toBe(true);
  });
});
