// Proves a drop in place survives kill -9: a serve-node process killed with SIGKILL while it drops
// a collection (at a seeded moment of the drop, then again while its restart finishes it) resumes
// the drop from its durable mark at start, without replaying the log, and ends up answering
// exactly as a node rebuilt from the log without the topic.
import { afterAll, describe, expect, it } from 'vitest';
import { rm } from 'node:fs/promises';
import { encodeBatch } from '../../shared/batch-codec.js';
import { HttpServeClient } from '../../shared/http-serve-client.js';
import { SETTINGS_TOPIC } from '../../shared/topics.js';
import { startServeNode } from '../../serve-node/index.js';
import {
  seededRandom,
  serveContents,
  sleep,
  spawnNode,
  testSeed,
  type ContentsQuery,
  type SpawnedNode,
} from '../harness/index.js';
import { silent, startLog, tempDir, type LogFixture } from '../integration/gateway-harness.js';

const BIG_DOCS = 20_000;
const KEPT_DOCS = 200;
const BATCH_RECORDS = 2_000;
const WAIT_MS_MAX = 30_000;
const POLL_MS = 5;
const WORDS = 'river stone cloud maple ember quartz harbor lantern meadow falcon'.split(' ');
const QUERIES: ContentsQuery[] = [
  { collection: 'kept', q: 'river', facets: 'color' },
  { collection: 'big', q: 'river' },
];
const SETTINGS = { searchable: ['title'], filterable: ['color'] };
const TIMESTAMP_MS = 1_800_000_000_000;

let log: LogFixture | undefined;
let serveProcess: SpawnedNode | undefined;
const dirs: string[] = [];

afterAll(async () => {
  await serveProcess?.kill();
  await log?.stop();
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

function batchOf(tag: string, from: number, count: number): Uint8Array {
  return encodeBatch(
    Array.from({ length: count }, (_, j) => {
      const i = from + j;
      const title = `${WORDS[i % WORDS.length]} ${WORDS[(i * 3) % WORDS.length]}`;
      return {
        key: `${tag}-${i}`,
        value: Buffer.from(JSON.stringify({ title, color: ['red', 'blue'][i % 2] })),
        timestampMs: TIMESTAMP_MS,
      };
    }),
  );
}

async function until<T>(what: string, poll: () => Promise<T | undefined>): Promise<T> {
  for (let waited = 0; waited < WAIT_MS_MAX; waited += POLL_MS) {
    const found = await poll().catch(() => undefined);
    if (found !== undefined) return found;
    await sleep(POLL_MS);
  }
  throw new Error(`${what}: not within ${WAIT_MS_MAX} ms`);
}

describe('serve-node killed while it drops a collection', () => {
  it('resumes the drop at start and equals a node rebuilt without the topic', async () => {
    const random = seededRandom(testSeed('serve-node-drop-kill'));
    log = await startLog(1);
    await log.client.append(
      SETTINGS_TOPIC,
      0,
      encodeBatch(
        ['big', 'kept'].map((key) => ({
          key,
          value: Buffer.from(JSON.stringify(SETTINGS)),
          timestampMs: TIMESTAMP_MS,
        })),
      ),
    );
    for (let from = 0; from < BIG_DOCS; from += BATCH_RECORDS) {
      await log.client.append('big', 0, batchOf('big', from, BATCH_RECORDS));
    }
    await log.client.append('kept', 0, batchOf('kept', 0, KEPT_DOCS));
    const dir = await tempDir('drop-kill');
    dirs.push(dir);
    // One document a step: the drop takes long enough to be killed in.
    const args = ['--data', dir, '--port', '0', '--log', log.url];
    args.push('--drop-step-docs-max', '1', '--topic-refresh-ms', '50');
    const spawn = async () => {
      serveProcess = await spawnNode('serve-node', args, { waitReady: false });
      return new HttpServeClient(serveProcess.url);
    };
    let client = await spawn();
    const waitFor = { 0: BIG_DOCS - 1 };
    await client.scan('big', { waitFor, waitMs: WAIT_MS_MAX });
    await client.scan('kept', { waitFor: { 0: KEPT_DOCS - 1 }, waitMs: WAIT_MS_MAX });

    await log.client.deleteTopic('big');
    await until('the drop began', async () =>
      (await client.status()).dropping?.includes('big') ? true : undefined,
    );
    await sleep(random.int(0, 200));
    const before = await client.status();
    await serveProcess!.kill('SIGKILL');
    expect(before.dropping, 'killed before the drop ended').toEqual(['big']);

    // Killed again while the restart finishes the drop.
    client = await spawn();
    await until('the drop resumed', async () =>
      (await client.status()).dropping?.includes('big') ? true : undefined,
    );
    await sleep(random.int(0, 20));
    await serveProcess!.kill('SIGKILL');

    client = await spawn();
    const status = await until('the drop finished', async () => {
      const now = await client.status();
      return now.lastDrop === undefined ? undefined : now;
    });
    expect(status.lastDrop).toMatchObject({ collection: 'big' });
    expect(status.lastRebuild).toBeUndefined();

    const rebuiltDir = await tempDir('drop-kill-rebuilt');
    dirs.push(rebuiltDir);
    const rebuilt = await startServeNode({
      dataDir: rebuiltDir,
      port: 0,
      logUrls: [log.url],
      logger: silent,
    });
    try {
      const collections = ['big', 'kept'];
      // Polled: the rebuilt node catches up meanwhile.
      await until('the same contents', async () => {
        const [killed, fresh] = await Promise.all([
          serveContents(client, collections, QUERIES),
          serveContents(rebuilt.client, collections, QUERIES),
        ]);
        return JSON.stringify(killed) === JSON.stringify(fresh) ? true : undefined;
      });
      expect(await serveContents(client, collections, QUERIES)).toEqual(
        await serveContents(rebuilt.client, collections, QUERIES),
      );
      expect(await client.countDocuments('kept')).toBe(KEPT_DOCS);
    } finally {
      await rebuilt.stop();
    }
  });
});
