// Proves the typed client's collection-wide calls against `tailbase start`: writes that ask for
// wait: 'applied' are read at once by another session that carries no token (bulk, put, delete).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Tailbase } from '../../client/sdk/index.js';
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
});
