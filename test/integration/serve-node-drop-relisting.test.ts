// Proves a serve-node tails a collection dropped and created again under the name at the
// incarnation the log holds once the drop is marked, even when a listing of the log's topics
// began before the log-side drop and is still out: that listing, reused, would tail the name as
// the dropped incarnation, and the next look would drop the new one again (an extra drop and
// replay). Real log-node and stores; the log's listings are held back by the test, not invented.
import { afterAll, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { openLogNode, type OpenLogNode } from '../../log-node/index.js';
import { encodeBatch } from '../../shared/batch-codec.js';
import type { LogClient } from '../../shared/log-api.js';
import type { TopicInfo } from '../../shared/topics.js';
import { openServeNode, type OpenServeNode } from '../../serve-node/index.js';
import { silent } from './gateway-harness.js';
import { tempDir, type TempDir } from '../harness/index.js';

const WAIT_MS_MAX = 30_000;
const POLL_MS = 20;
const TOPIC_REFRESH_MS = 50;
/** Listings after the held one: the first of the refreshes among them would see the mismatch. */
const LISTINGS_AFTER = 5;
const REASON = 'dropped by the test';

const dirs: TempDir[] = [];
const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close();
  for (const dir of dirs) dir.cleanup();
});

async function until(what: string, done: () => boolean | Promise<boolean>): Promise<void> {
  for (const startedMs = Date.now(); Date.now() - startedMs < WAIT_MS_MAX;) {
    if (await done()) return;
    await sleep(POLL_MS);
  }
  throw new Error(`${what}: not within ${WAIT_MS_MAX} ms`);
}

describe('a drop while a listing of the log is out', () => {
  it('tails the collection created again at the incarnation the log holds, with no second drop', async () => {
    const logDir = tempDir('relisting-log');
    const storeDir = tempDir('relisting-stores');
    dirs.push(logDir, storeDir);
    const log: OpenLogNode = await openLogNode({
      dataDir: logDir.path,
      partitions: 1,
      logger: silent,
    });
    closers.push(() => log.stop());
    const append = (key: string) =>
      log.client.append(
        'c',
        0,
        encodeBatch([{ key, value: Buffer.from('{"n":1}'), timestampMs: 1 }]),
      );
    await log.client.ensureTopic('c');
    await append('old');
    // The real log, its listings counted; one, once armed, answered only when released.
    const listings = { answered: 0, hold: null as Promise<void> | null };
    const client: LogClient = Object.create(log.client, {
      topics: {
        value: async (): Promise<TopicInfo[]> => {
          const hold = listings.hold;
          listings.hold = null;
          const topics = await log.client.topics();
          await hold;
          listings.answered += 1;
          return topics;
        },
      },
    });
    const serve: OpenServeNode = await openServeNode(
      {
        dataDir: storeDir.path,
        partitions: [0],
        logger: silent,
        limits: { topicRefreshMs: TOPIC_REFRESH_MS },
      },
      client,
    );
    closers.push(() => serve.stop());
    await until('the old document applied', () => serve.node.replica().applied('c', 0) === 1);

    let release = () => {};
    listings.hold = new Promise((resolve) => (release = resolve));
    const heldListing = serve.node.discover();
    await until('the held listing read the log', () => listings.hold === null);
    await log.client.deleteTopic('c');
    await log.client.ensureTopic('c');
    await append('new');
    const incarnation = (await log.client.topics()).find((t) => t.name === 'c')?.incarnation;
    expect(incarnation).toBe(1);
    await serve.node.dropCollection('c', REASON);
    release();
    await heldListing;
    const after = listings.answered;
    await until('more listings', () => listings.answered >= after + LISTINGS_AFTER);
    await until(
      'no drop under way',
      async () => ((await serve.client.status()).dropping ?? []).length === 0,
    );

    expect(serve.node.replica().docs.incarnation('c')).toBe(1);
    expect((await serve.client.status()).lastDrop).toMatchObject({
      collection: 'c',
      reason: REASON,
    });
    expect((await serve.client.scan('c', { limit: 10 })).items.map((doc) => doc.key)).toEqual([
      'new',
    ]);
  });
});
