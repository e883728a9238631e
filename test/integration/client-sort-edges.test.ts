// Through `tailbase start` and the typed client: a sorted scan pages in order over sort values
// with NUL, astral characters, -0 and 1e21; the search iterator ends at the gateway's deepest page.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Tailbase } from '../../client/sdk/index.js';
import { spawnEmbedded, type SpawnedEmbedded } from '../harness/index.js';

let node: SpawnedEmbedded;
let db: Tailbase;

beforeAll(async () => {
  node = await spawnEmbedded({ partitions: 2 });
  db = new Tailbase({ url: node.url });
});

afterAll(async () => {
  await node?.stop();
});

describe('sorted scans', () => {
  it('sort values with NUL, astral characters and -0 page in order', async () => {
    const things = db.collection<{ name: string | number }>('oddsorts');
    await things.putSettings({ searchable: ['name'], sortable: ['name'] });
    const names: Array<[string, string | number]> = [
      ['k1', 'a\u0000b'],
      ['k2', 'a'],
      ['k3', '\u{1F600}'],
      ['k4', '\uFFFD'],
      ['k5', -0],
      ['k6', 0],
      ['k7', 1e21],
      ['k8', -1e21],
    ];
    for (const [key, name] of names) await things.put(key, { name });
    const seen: string[] = [];
    for await (const page of things.scan({ sort: 'name:asc', limit: 1 })) {
      seen.push(...page.items.map((item) => item.key));
    }
    expect(seen).toEqual(['k8', 'k5', 'k6', 'k7', 'k2', 'k1', 'k4', 'k3']);
  });
});

describe('the search iterator', () => {
  it('stops at the deepest page the gateway serves instead of throwing', async () => {
    const words = db.collection<{ text: string }>('manywords');
    await words.bulk(
      Array.from({ length: 1100 }, (_, i) => ({ key: `w${i}`, value: { text: 'same word' } })),
    );
    let hits = 0;
    for await (const page of words.search('word', { limit: 100 })) hits += page.hits.length;
    expect(hits).toBe(1000);
  });

  it('a sorted scan pages past a document whose sort value is a long string', async () => {
    const books = db.collection<{ title: string }>('longtitles');
    await books.putSettings({ searchable: ['title'], sortable: ['title'] });
    const keys = ['a', 'b', 'c', 'd'];
    for (const [i, key] of keys.entries()) {
      await books.put(key, { title: `${String.fromCharCode(0x61 + i)}${'x'.repeat(20_000)}` });
    }
    const seen: string[] = [];
    for await (const page of books.scan({ sort: 'title:asc', limit: 1 })) {
      seen.push(...page.items.map((item) => item.key));
    }
    expect(seen).toEqual(keys);
  });
});
