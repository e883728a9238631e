// Proves settings through the typed client: putSettings writes search settings and topic configs,
// patchSettings merges into them,
// getSettings reads back the latest of them from the log (right after the write, no waiting), a
// collection that does not exist is a 404 `collection_not_found`, and a search after the write
// ranks with the new settings (the session's token carries the settings write).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Tailbase, TailbaseError } from '../../client/sdk/index.js';
import { spawnEmbedded, type SpawnedEmbedded } from '../harness/index.js';

let node: SpawnedEmbedded;
beforeAll(async () => {
  node = await spawnEmbedded({ partitions: 2 });
});
afterAll(() => node.stop());

describe('typed client settings', () => {
  it('reads back the latest settings written', async () => {
    const db = new Tailbase({ url: node.url });
    const books = db.collection<{ title: string; body: string }>('books');
    await books.putSettings({ searchable: ['body'], retentionMs: 86_400_000 });
    await books.putSettings({ searchable: ['title'], weights: { title: 2 } });
    const view = await books.getSettings();
    expect(view.collection).toBe('books');
    expect(view.settings).toMatchObject({ searchable: ['title'], weights: { title: 2 } });
    expect(view.topicConfigs).toMatchObject({ retentionMs: 86_400_000 });

    await books.put('a', { title: 'plain', body: 'zebra' });
    await books.put('b', { title: 'zebra', body: 'plain' });
    const found = await books.searchPage('zebra');
    expect(found.hits.map((hit) => hit.key)).toEqual(['b']);
  });

  it('patchSettings changes the fields it names and keeps the others', async () => {
    const db = new Tailbase({ url: node.url });
    const films = db.collection('films');
    await films.putSettings({ searchable: ['title'], weights: { title: 3 } });
    const patched = await films.patchSettings({ filterable: ['year'] });
    expect(patched.settings).toMatchObject({
      searchable: ['title'],
      weights: { title: 3 },
      filterable: ['year'],
    });
    expect((await films.getSettings()).settings).toEqual(patched.settings);
    const reset = await films.patchSettings({ weights: null });
    expect(reset.settings).toMatchObject({ searchable: ['title'], weights: {} });
  });

  it('answers 404 collection_not_found for a collection that does not exist', async () => {
    const db = new Tailbase({ url: node.url });
    const error = await db
      .collection('nothing-here')
      .getSettings()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TailbaseError);
    expect(error).toMatchObject({ status: 404, code: 'collection_not_found' });
  });
});
