// Proves a one-word search answered from the top-k lists on read threads ranks as FTS5 does: two
// `tailbase start` with two read threads take the same writes, one keeping lists of every word in
// at least three documents and one keeping none (so it ranks every match with FTS5), and a token
// search of a listed word returns the same hits with the same scores from both, on every read
// thread; a write that changes the ranking (a short document repeating the word) is first in
// the next token search of both.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { SEARCH_FILE } from '../../serve-node/search-store.js';
import { storedPostings } from '../../serve-node/topk-index.js';
import { spawnEmbedded, type SpawnedEmbedded } from '../harness/index.js';
import { call } from './gateway-harness.js';

const READ_THREADS = 2;
const PARTITIONS = 2;
const LISTED_DF_MIN = 3;
/** A threshold no word reaches: every search ranked by FTS5. */
const LISTS_NONE = 1_000_000_000;
const WAIT_MS = 5_000;
const WORD = 'apple';
const FILLER = ['pear', 'plum', 'fig', 'kiwi', 'lime', 'date'];

const nodes: SpawnedEmbedded[] = [];
afterAll(async () => {
  for (const node of nodes) await node.stop();
});

async function start(listedDfMin: number): Promise<SpawnedEmbedded> {
  const node = await spawnEmbedded({
    partitions: PARTITIONS,
    args: [
      ...['--read-threads', String(READ_THREADS)],
      ...['--search-topk-listed-df-min', String(listedDfMin)],
    ],
  });
  nodes.push(node);
  return node;
}

/** Documents holding the word once to thrice among fillers of many lengths: many bm25 scores. */
function documents(): Array<{ key: string; value: { title: string; body: string } }> {
  return Array.from({ length: 24 }, (_, i) => {
    const words = Array.from({ length: 3 + ((i * 7) % 11) }, (_, w) => FILLER[(i + w) % 6]);
    for (let n = 0; n < 1 + (i % 3); n++) words.splice((i + n * 5) % words.length, 0, WORD);
    return {
      key: `d${String(i).padStart(2, '0')}`,
      value: { title: FILLER[i % 6], body: words.join(' ') },
    };
  });
}

/** A session's writes to one node, each carrying the token of those before it. */
class Session {
  token: string | null = null;

  constructor(private readonly url: string) {}

  async put(key: string, value: unknown): Promise<void> {
    const headers: Record<string, string> = this.token ? { 'tailbase-token': this.token } : {};
    const put = await call(this.url, 'PUT', `/v1/collections/fruit/docs/${key}`, value, headers);
    expect(put.status).toBe(200);
    this.token = put.body.token as string;
  }

  /** The search at the session's token, asked of more threads than there are: each answers. */
  async searches(): Promise<Array<Array<[string, number]>>> {
    const path = `/v1/collections/fruit/search?q=${WORD}&limit=10&wait_ms=${WAIT_MS}`;
    const answers = await Promise.all(
      Array.from({ length: READ_THREADS * 3 }, () =>
        call(this.url, 'GET', path, undefined, { 'tailbase-token': this.token! }),
      ),
    );
    return answers.map((answer) => {
      expect(answer.status).toBe(200);
      return (answer.body.hits as Array<{ key: string; score: number }>).map((hit) => [
        hit.key,
        hit.score,
      ]);
    });
  }
}

/** Postings the node's search store keeps for the word (its one serve store). */
function listedPostings(node: SpawnedEmbedded): number {
  const serveDir = join(node.dataDir, 'serve');
  const [store] = readdirSync(serveDir, { recursive: true, encoding: 'utf8' }).filter((file) =>
    file.endsWith(SEARCH_FILE),
  );
  const db = new Database(join(serveDir, store), { readonly: true });
  try {
    return [...storedPostings(db, null)].filter((posting) => posting.term === WORD).length;
  } finally {
    db.close();
  }
}

/** Each answer of `listed` the hits of `ranked`'s first answer: same keys in order, scores to 1e-9. */
function expectSameRanking(
  listed: Array<Array<[string, number]>>,
  ranked: Array<Array<[string, number]>>,
) {
  const [reference] = ranked;
  expect(reference.length).toBe(10);
  for (const answer of [...listed, ...ranked]) {
    expect(answer.map(([key]) => key)).toEqual(reference.map(([key]) => key));
    answer.forEach(([, score], i) => expect(Math.abs(score - reference[i][1])).toBeLessThan(1e-9));
  }
}

describe('top-k search on read threads (tailbase start --read-threads 2)', () => {
  it('ranks a listed word as FTS5 does, and the next token read sees a write that reorders it', async () => {
    const [withLists, withoutLists] = await Promise.all([start(LISTED_DF_MIN), start(LISTS_NONE)]);
    const sessions = [new Session(withLists.url), new Session(withoutLists.url)];
    for (const doc of documents()) {
      for (const session of sessions) await session.put(doc.key, doc.value);
    }
    const [listed, ranked] = await Promise.all(sessions.map((session) => session.searches()));
    expectSameRanking(listed, ranked);
    expect(listedPostings(withLists)).toBe(documents().length);
    expect(listedPostings(withoutLists)).toBe(0);

    // Short and repeating the word: the best score, and the averages every score uses move.
    for (const session of sessions) {
      await session.put('best', { title: WORD, body: `${WORD} ${WORD} ${WORD}` });
    }
    const [listedAfter, rankedAfter] = await Promise.all(sessions.map((s) => s.searches()));
    expect(rankedAfter[0][0][0]).toBe('best');
    expectSameRanking(listedAfter, rankedAfter);
    expect(listedPostings(withLists)).toBe(documents().length + 1);
  });
});
