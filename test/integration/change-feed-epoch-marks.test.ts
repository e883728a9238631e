// Proves, on `tailbase start`, that change feeds of a view share the gateway's count of its
// partitions' epochs (gateway/feed-epochs.ts): a first feed that starts past the view's many
// records counts every one of them below its start, a second one opened after a few more writes
// counts only those (the metric tailbase_gateway_feed_epoch_records_total), and both send the
// records past their start and no claim. Before, every feed counted the view from its log start.
import { describe, expect, it } from 'vitest';
import type { ViewDefinition } from '../../shared/view-definition.js';
import { freePort } from '../harness/free-port.js';
import { tempDir } from '../harness/temp-dir.js';
import { call } from './gateway-harness.js';
import { caughtUpView, startWithViews } from './view-harness.js';

/** One partition: every record of the view lands in the partition the feeds count. */
const PARTITIONS = 1;
const ORDERS = 300;
const LATER_ORDERS = 10;
/** One output record per order: a group per key. */
const PER_ORDER: ViewDefinition = { from: 'orders', groupBy: ['id'], aggregates: { n: 'count()' } };

async function counted(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text
    .split('\n')
    .find((l) => l.startsWith('tailbase_gateway_feed_epoch_records_total'));
  if (line === undefined)
    throw new Error('no tailbase_gateway_feed_epoch_records_total in /metrics');
  return Number(line.split(' ').at(-1));
}

async function writeOrders(url: string, from: number, count: number): Promise<void> {
  const orders = Array.from({ length: count }, (_, i) => ({
    key: `o${from + i}`,
    value: { id: `o${from + i}` },
  }));
  expect((await call(url, 'POST', '/v1/collections/orders/docs', orders)).status).toBe(200);
}

/** A feed of the view from its end: the keys of the first `limit` events once one more order is written. */
async function feedFromNow(url: string, next: number): Promise<string[]> {
  const response = await fetch(`${url}/v1/changes?collection=per_order&from=now&limit=1`);
  expect(response.status).toBe(200);
  await writeOrders(url, next, 1);
  const lines = (await response.text()).trim().split('\n');
  return lines.map((line) => (JSON.parse(line) as { key: string }).key);
}

describe("change feeds of a view share the gateway's epoch count", () => {
  it('a second feed counts only the records written since the first one started', async () => {
    const dir = tempDir('change-feed-epoch-marks');
    const node = await startWithViews(dir.path, await freePort(), PARTITIONS);
    try {
      const { url } = node;
      await writeOrders(url, 0, ORDERS);
      expect((await call(url, 'PUT', '/v1/views/per_order', PER_ORDER)).status).toBe(200);
      expect((await caughtUpView(url, 'per_order')).size).toBe(ORDERS);
      expect(await counted(url)).toBe(0);

      expect(await feedFromNow(url, ORDERS)).toEqual([JSON.stringify([`o${ORDERS}`])]);
      const first = await counted(url);
      // Every order's record and the processor's claim, below the first feed's start.
      expect(first).toBeGreaterThanOrEqual(ORDERS);

      await writeOrders(url, ORDERS + 1, LATER_ORDERS);
      const last = ORDERS + 1 + LATER_ORDERS;
      // Every record the view made is in its topic (a strong read applied it) before the feed opens.
      expect((await caughtUpView(url, 'per_order')).size).toBe(last);
      expect(await feedFromNow(url, last)).toEqual([JSON.stringify([`o${last}`])]);
      // The first feed's own record and the later orders': from the first feed's start on.
      expect((await counted(url)) - first).toBe(1 + LATER_ORDERS);
    } finally {
      await node.kill();
      dir.cleanup();
    }
  });
});
