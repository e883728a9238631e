// Proves the typed client's collection-wide calls against `tailbase start`: writes that ask for
// wait: 'applied' are read at once by another session that carries no token (bulk, put, delete);
// collections() lists them with their documents; drop() removes one, after which the session's
// token is refused for it (invalid_token, reason dropped_collection) and the name starts empty.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Tailbase, TailbaseError } from '../../client/sdk/index.js';
import { spawnEmbedded, type SpawnedEmbedded } from '../harness/index.js';

let node: SpawnedEmbedded;
beforeAll(async () => {
  node = await spawnEmbedded({ partitions: 2 });
});
afterAll(() => node.stop());

describe('typed client, whole collections', () => {
  it("writes with wait: 'applied' are read at once by a session without a token", async () => {
    const writer = new Tailbase({ url: node.url }).collection<{ text: string }>('applied');
    const items = Array.from({ length: 50 }, (_, i) => ({
      key: `k${i}`,
      value: { text: 'okapi' },
    }));
    await writer.bulk(items, { wait: 'applied', chunkRecords: 20 });
    await writer.put('one', { text: 'bongo' }, { wait: 'applied', waitMs: 5000 });
    const reader = new Tailbase({ url: node.url }).collection<{ text: string }>('applied');
    const found = await reader.searchPage('okapi', { limit: 1, consistency: 'eventual' });
    expect(found.total).toBe(items.length);
    expect((await reader.get('one', { consistency: 'eventual' })).value).toEqual({ text: 'bongo' });
    await writer.delete('one', { wait: 'applied' });
    const gone = await reader.get('one', { consistency: 'eventual' }).catch((e: unknown) => e);
    expect(gone).toMatchObject({ status: 404, code: 'document_not_found' });
  });

  it('lists collections, drops one; a read with its old token is refused, the name starts anew', async () => {
    const db = new Tailbase({ url: node.url });
    const birds = db.collection<{ name: string }>('birds');
    await birds.bulk(
      Array.from({ length: 5 }, (_, i) => ({ key: `b${i}`, value: { name: `bird ${i}` } })),
      { wait: 'applied' },
    );
    const listed = (await db.collections()).find((c) => c.collection === 'birds');
    expect(listed).toMatchObject({ documents: 5, incarnation: 0 });
    // Bytes on disk, each part known here (the API suite checks how they move).
    const { log, lmdb, sqlite, total } = listed!.bytes;
    expect([log, lmdb, sqlite].every((part) => typeof part === 'number')).toBe(true);
    expect(total).toBe(log! + lmdb! + sqlite!);
    const dropped = await birds.drop();
    expect(dropped).toMatchObject({ collection: 'birds', dropped: true });
    expect((await db.collections()).map((c) => c.collection)).not.toContain('birds');
    const refused = await birds.get('b1').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(TailbaseError);
    expect(refused).toMatchObject({ status: 400, code: 'invalid_token' });
    expect((refused as TailbaseError).details.reason).toBe('dropped_collection');
    const fresh = new Tailbase({ url: node.url }).collection<{ name: string }>('birds');
    await fresh.put('n1', { name: 'new bird' }, { wait: 'applied' });
    const page = await fresh.scanPage();
    expect(page.items.map((item) => item.key)).toEqual(['n1']);
    const missing = await db
      .collection('no-such-birds')
      .drop()
      .catch((e: unknown) => e);
    expect(missing).toMatchObject({ status: 404, code: 'collection_not_found' });
  });
});
