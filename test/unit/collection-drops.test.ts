// Proves a drop in place (serve-node/collection-drops.ts) answers once its own steps 1-2 are done,
// without waiting for the document deletion of a drop asked before it, the deletions still one at
// a time; that a failed deletion step is retried while the drop stays listed (a node that forgot
// it would leave the dropped incarnation's documents behind), outside the queue of deletions, so
// one that keeps failing holds up no other drop; that a stop ends its pause; and that the name is
// free to be tailed again once marked, a second drop of it deleting its own key space. Real replicas
// (LMDB and SQLite in temp dirs), fed through their apply path; a step's failure is injected.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CollectionDrops } from '../../serve-node/collection-drops.js';
import type { DroppingSpace } from '../../serve-node/doc-store.js';
import { Replica } from '../../serve-node/replica.js';
import { createLogger } from '../../shared/logger.js';
import { ReplicaFeed } from '../harness/replica-feed.js';

const DOCS = 200;

const dirs: string[] = [];
const replicas: Replica[] = [];
afterEach(async () => {
  for (const replica of replicas.splice(0)) await replica.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/**
 * A replica whose first `failures` drop steps throw, and every step of a collection in `failOn`,
 * as a full disk's transaction would.
 */
class FailingReplica extends Replica {
  failures = 0;
  readonly failOn = new Set<string>();
  override dropStep(dropped: DroppingSpace, docsMax: number): number {
    if (this.failOn.has(dropped.collection)) throw new Error('injected: the step never commits');
    if (this.failures > 0) {
      this.failures -= 1;
      throw new Error('injected: the step could not commit');
    }
    return super.dropStep(dropped, docsMax);
  }
}

function loaded(collections: string[]): FailingReplica {
  const dir = mkdtempSync(join(tmpdir(), 'collection-drops-'));
  dirs.push(dir);
  const replica = new FailingReplica(dir);
  replicas.push(replica);
  const feed = new ReplicaFeed(() => replica);
  for (const collection of collections) {
    const records: Array<[string, unknown]> = [];
    for (let i = 0; i < DOCS; i++) records.push([`k${i}`, { title: `doc ${i}`, n: i }]);
    feed.apply(collection, 0, records);
  }
  return replica;
}

/** The collections of the drop marks the stores hold, sorted. */
const marked = (replica: Replica) =>
  replica.docs
    .droppingSpaces()
    .map((dropped) => dropped.collection)
    .sort();

/** The documents left of a collection's first incarnation (key space 0). */
const leftOf = (replica: Replica, collection: string) =>
  replica.docs.countAfter(collection, null, 0);

function dropsOf(
  replica: Replica,
  stepDocsMax: number,
  {
    stopped = (): boolean => false,
    retryMsMax = 200,
  }: { stopped?: () => boolean; retryMsMax?: number } = {},
): CollectionDrops {
  return new CollectionDrops({
    replica: () => replica,
    stepDocsMax,
    rebuilt: () => Promise.resolve(),
    paused: () => null,
    stopped,
    onTablesDropped: () => {},
    retryMsMax,
    logger: createLogger('collection-drops', 'silent'),
  });
}

describe('CollectionDrops', () => {
  it("answers a drop once it is marked, while an earlier drop's documents are still deleted", async () => {
    const replica = loaded(['a', 'b', 'c']);
    // One document a step: the first drop's deletion takes DOCS turns of the event loop.
    const drops = dropsOf(replica, 1);
    const order: string[] = [];
    const [a, b, c] = ['a', 'b', 'c'].map((collection) => {
      const drop = drops.drop(collection, 'test');
      void drop.marked.then(() => order.push(`${collection} marked`));
      void drop.done.then(() => order.push(`${collection} done`));
      return drop;
    });
    await c.marked;
    expect(order).toEqual(['a marked', 'b marked', 'c marked']);
    expect(drops.dropping()).toEqual(['a', 'b', 'c']);
    expect(marked(replica)).toEqual(['a', 'b', 'c']);
    await Promise.all([a.done, b.done, c.done]);
    // The deletions one at a time, in the order asked.
    expect(order.slice(3)).toEqual(['a done', 'b done', 'c done']);
    await drops.settled();
    expect(drops.dropping()).toEqual([]);
    expect(marked(replica)).toEqual([]);
    for (const collection of ['a', 'b', 'c']) {
      expect(leftOf(replica, collection)).toBe(0);
    }
  });

  it('retries a failed deletion step, the drop listed until its documents and mark are gone', async () => {
    const replica = loaded(['gone', 'kept']);
    replica.failures = 3;
    const drops = dropsOf(replica, 50);
    const drop = drops.drop('gone', 'test');
    await drop.marked;
    // Listed throughout the failures, the name free to be tailed again meanwhile.
    for (let i = 0; i < 20 && replica.failures > 0; i++) {
      expect(drops.dropping()).toEqual(['gone']);
      expect(drops.beingMarked('gone')).toBe(false);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(replica.failures).toBe(0);
    await drop.done;
    expect(drops.dropping()).toEqual([]);
    expect(marked(replica)).toEqual([]);
    expect(leftOf(replica, 'gone')).toBe(0);
    expect(replica.docs.countAfter('kept', null)).toBe(DOCS);
    expect(drops.last()?.collection).toBe('gone');
  });

  it("a deletion that keeps failing holds up no later drop's, and a stop ends its pause", async () => {
    const replica = loaded(['bad', 'good']);
    replica.failOn.add('bad');
    let stopping = false;
    // Long pauses: a later drop that waited for the failing one's retries would not end in time.
    const drops = dropsOf(replica, 50, { stopped: () => stopping, retryMsMax: 60_000 });
    const bad = drops.drop('bad', 'test');
    const good = drops.drop('good', 'test');
    await good.done;
    expect(leftOf(replica, 'good')).toBe(0);
    expect(drops.dropping()).toEqual(['bad']);
    // Let its pauses grow past a few seconds, then stop: the pause ends at once.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    stopping = true;
    const stoppedAt = performance.now();
    drops.stop();
    await drops.settled();
    expect(performance.now() - stoppedAt).toBeLessThan(1_000);
    await expect(bad.done).rejects.toMatchObject({ code: 'stopping' });
    // The mark stays: the next start finishes the drop.
    expect(marked(replica)).toEqual(['bad']);
  });

  it('a collection created again while the old one is deleted is written apart, and dropped apart', async () => {
    const replica = loaded(['again']);
    const drops = dropsOf(replica, 1);
    const first = drops.drop('again', 'test');
    expect(drops.beingMarked('again')).toBe(true);
    await first.marked;
    expect(drops.beingMarked('again')).toBe(false);
    // The new incarnation's records, applied while the old one's deletion goes on.
    new ReplicaFeed(() => replica).apply('again', 0, [
      ['k1', { title: 'new' }],
      ['fresh', { title: 'new' }],
    ]);
    expect(replica.docs.scan('again', {}, 10).items.map((item) => item.key)).toEqual([
      'fresh',
      'k1',
    ]);
    expect(leftOf(replica, 'again')).toBeGreaterThan(0);
    const second = drops.drop('again', 'test');
    await second.marked;
    expect(drops.dropping()).toEqual(['again']);
    expect(replica.docs.droppingSpaces()).toEqual([
      { collection: 'again', space: 0 },
      { collection: 'again', space: 1 },
    ]);
    await Promise.all([first.done, second.done]);
    expect(replica.docs.droppingSpaces()).toEqual([]);
    expect(leftOf(replica, 'again')).toBe(0);
    expect(replica.docs.countAfter('again', null, 1)).toBe(0);
    expect(replica.docs.scan('again', {}, 10).items).toEqual([]);
  });
});
