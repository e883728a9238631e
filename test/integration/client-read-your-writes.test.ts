// Proves the typed client reads its own writes with no extra code: 32 concurrent sessions, each
// putting a few documents at once (so answers come back out of order and the session must merge
// their tokens) and then at once getting, searching and scanning them, see 0 stale reads, against
// the embedded process (`tailbase start`) and against a cluster of real processes (log-node, two
// serve-nodes each hosting half the partitions, gateway). Reads by a client that carries no token
// are counted too, to show the token is what makes the difference.
import { afterAll, describe, expect, it } from 'vitest';
import { Tailbase } from '../../client/sdk/index.js';
import { offsetsOf, TokenCodec } from '../../shared/token.js';
import {
  kafkaFace,
  spawnEmbedded,
  spawnNode,
  type SpawnedNode,
  tempDir,
  type TempDir,
} from '../harness/index.js';

const SESSIONS = 32;
const ROUNDS = 3;
/** Documents a session writes at once each round: enough to touch most of the partitions. */
const WRITES_AT_ONCE = 4;
const PARTITIONS = 4;

interface Book {
  title: string;
  session: number;
  round: number;
}

const nodes: SpawnedNode[] = [];
const dirs: TempDir[] = [];
afterAll(async () => {
  await Promise.all(nodes.map((node) => node.stop()));
  for (const dir of dirs) dir.cleanup();
});

/**
 * Runs the sessions against `url`; answers the stale reads seen, by kind, and the writes whose
 * offset the session's token did not cover once they were answered (the token merge's work).
 */
async function sessionsReadTheirWrites(url: string, collection: string) {
  const stale = { get: 0, search: 0, scan: 0, uncovered: 0 };
  const codec = new TokenCodec((await new Tailbase({ url }).status()).clusterId, PARTITIONS);
  const session = async (n: number) => {
    const db = new Tailbase({ url });
    const books = db.collection<Book>(collection);
    for (let round = 0; round < ROUNDS; round++) {
      const keys = Array.from({ length: WRITES_AT_ONCE }, (_, i) => `s${n}-r${round}-${i}`);
      // A word only this round of this session writes, so a search finds exactly these.
      const word = `w${n}x${round}q${collection}`;
      const written = await Promise.all(
        keys.map((key) => books.put(key, { title: `${word} ${key}`, session: n, round })),
      );
      const covered = offsetsOf(codec.decode(db.token ?? ''), collection);
      for (const { partition, offset } of written) {
        if (!((covered.get(partition) ?? -1) >= offset)) stale.uncovered += 1;
      }
      const [gets, found, scanned] = await Promise.all([
        // A stale get answers 404 (no such document yet): counted, not thrown.
        Promise.all(keys.map((key) => books.get(key).catch(() => null))),
        books.searchPage(word, { limit: 50 }),
        books.scanPage({ prefix: `s${n}-r${round}-`, limit: 50 }),
      ]);
      for (const doc of gets) if (doc?.value.round !== round) stale.get += 1;
      const hits = new Set(found.hits.map((hit) => hit.key));
      stale.search += keys.filter((key) => !hits.has(key)).length;
      const items = new Set(scanned.items.map((item) => item.key));
      stale.scan += keys.filter((key) => !items.has(key)).length;
    }
  };
  await Promise.all(Array.from({ length: SESSIONS }, (_, n) => session(n)));
  return stale;
}

/** Writes with one client and reads at once with another that carries no token. */
async function readsWithoutToken(url: string, collection: string): Promise<number> {
  const writer = new Tailbase({ url }).collection(collection);
  const reader = new Tailbase({ url }).collection(collection);
  let stale = 0;
  for (let i = 0; i < 50; i++) {
    await writer.put(`plain-${i}`, { i });
    await reader.get(`plain-${i}`).catch(() => (stale += 1));
  }
  return stale;
}

describe('typed client read-your-writes', () => {
  it('32 sessions against the embedded process see 0 stale reads', async () => {
    const node = await spawnEmbedded({ partitions: PARTITIONS });
    nodes.push(node);
    const stale = await sessionsReadTheirWrites(node.url, 'embedded');
    const untokened = await readsWithoutToken(node.url, 'plain');
    console.info(
      `embedded: stale with the token ${JSON.stringify(stale)}, without ${untokened}/50`,
    );
    expect(stale).toEqual({ get: 0, search: 0, scan: 0, uncovered: 0 });
  });

  it('32 sessions against a cluster of processes see 0 stale reads', async () => {
    const logDir = tempDir('client-ryw-log');
    const serveDirs = [tempDir('client-ryw-serve0'), tempDir('client-ryw-serve1')];
    dirs.push(logDir, ...serveDirs);
    const kafka = await kafkaFace();
    const log = await spawnNode('log-node', [
      ...['--data', logDir.path, '--port', '0', '--partitions', String(PARTITIONS)],
      ...kafka.args,
    ]);
    nodes.push(log);
    const serves: SpawnedNode[] = [];
    for (const [i, hosted] of ['0-1', '2-3'].entries()) {
      const serve = await spawnNode('serve-node', [
        ...['--data', serveDirs[i].path, '--port', '0', '--log', kafka.url, '--partitions', hosted],
      ]);
      nodes.push(serve);
      serves.push(serve);
    }
    const gateway = await spawnNode('gateway', [
      ...['--port', '0', '--log', kafka.url, '--serve', serves.map((s) => s.url).join(',')],
    ]);
    nodes.push(gateway);
    const stale = await sessionsReadTheirWrites(gateway.url, 'cluster');
    const untokened = await readsWithoutToken(gateway.url, 'plain');
    console.info(`cluster: stale with the token ${JSON.stringify(stale)}, without ${untokened}/50`);
    expect(stale).toEqual({ get: 0, search: 0, scan: 0, uncovered: 0 });
  });
});
