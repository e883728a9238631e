// Proves a serve-node's stores survive a real power cut consistent and resume from their last flush:
// a spawned serve-node keeps its stores on power-cut-fs (test/harness/power-cut-fs.c: unsynced
// writes are lost at the cut), applies a load, is flushed, applies a tail of updates, deletes and
// new documents, and loses power. Restarted after the "reboot", it opens its stores at exactly the
// flush before the tail (no rebuild, no replay from 0), replays the tail, and answers every
// document, search hit, score and total exactly as a serve-node rebuilt from the log does. The
// log is written and tailed over the Kafka protocol.
// Where FUSE cannot be built or mounted it skips and says why, unless TAILBASE_REQUIRE_FUSE=1
// (as .ci/run sets): then it fails, so CI never passes it by skipping.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startLogNode, type RunningLogNode } from '../../log-node/index.js';
import { startServeNode, type RunningServeNode } from '../../serve-node/index.js';
import { encodeBatch, type LogRecord } from '../../shared/batch-codec.js';
import { KafkaLogClient } from '../../shared/kafka-log/index.js';
import { partitionFor } from '../../shared/partitioner.js';
import { HttpServeClient } from '../../shared/http-serve-client.js';
import { createLogger } from '../../shared/logger.js';
import type { AppliedOffsets, ServeClient } from '../../shared/serve-api.js';
import {
  seededRandom,
  sleep,
  spawnNode,
  type SpawnedNode,
  tempDir,
  type TempDir,
  testSeed,
} from '../harness/index.js';
import { buildPowerCutFs, mountPowerCutFs, type PowerCutFs } from '../harness/power-cut-fs.js';

const FUSE_REQUIRED = process.env.TAILBASE_REQUIRE_FUSE === '1';
const COLLECTION = 'notes';
const LOADED_DOCS = 3_000;
const TAIL_RECORDS = 600;
const TAIL_STEP_RECORDS = 10;
const BATCH_RECORDS = 250;
/** Long enough that the tail is applied and the power cut well before the next flush. */
const STORE_FLUSH_MS = 10_000;
const WORDS = (
  'river stone cloud maple ember quartz harbor lantern meadow falcon willow cedar amber ' +
  'canyon delta fjord glacier hollow island jungle'
).split(' ');
const silent = createLogger('test', 'silent');

const dirs: TempDir[] = [];
let logNode: RunningLogNode | undefined;
let serveProcess: SpawnedNode | undefined;
let reference: RunningServeNode | undefined;
let mount: PowerCutFs | undefined;
let logClient: KafkaLogClient | undefined;
afterAll(async () => {
  logClient?.close();
  await serveProcess?.kill();
  await reference?.stop();
  await mount?.unmount();
  await logNode?.stop();
  for (const dir of dirs) dir.cleanup();
});

function newDir(name: string): string {
  const dir = tempDir(name);
  dirs.push(dir);
  return dir.path;
}

/** The generation directory of the serve-node's stores under `dataDir`. */
function storesDir(dataDir: string): string {
  const [stores] = fs.readdirSync(dataDir).filter((name) => name.startsWith('stores-'));
  return path.join(dataDir, stores);
}

/** Every document, in key order, as the node answers it once it has applied `waitFor`. */
async function everyDocument(serve: ServeClient, waitFor: AppliedOffsets) {
  const docs: { key: string; json: string; offset: number; partition: number }[] = [];
  let after: string | undefined;
  for (let page = 0; page < 100; page++) {
    const result = await serve.scan(COLLECTION, { after, limit: 1_000, waitFor, waitMs: 60_000 });
    docs.push(
      ...result.items.map(({ key, json, offset, partition }) => ({ key, json, offset, partition })),
    );
    if (!result.more) return docs;
    after = result.items[result.items.length - 1].key;
  }
  throw new Error('more than 100 pages');
}

/** Each word's hits (key and score, best first) and total. */
async function everySearch(serve: ServeClient) {
  const answers = [];
  for (const q of [...WORDS, 'river stone', 'tail', 'tail OR ember']) {
    const result = await serve.search(COLLECTION, { q, limit: 100 });
    answers.push({ q, total: result.total, hits: result.hits.map((h) => [h.key, h.score]) });
  }
  return answers;
}

describe('serve-node stores across a power cut', () => {
  it('resume at their last flush after the cut and answer as a replica rebuilt from the log', async (context) => {
    const built = buildPowerCutFs(newDir('power-cut-bin'));
    if ('error' in built && FUSE_REQUIRED) {
      throw new Error(`FUSE is required here (TAILBASE_REQUIRE_FUSE=1): ${built.error}`);
    }
    if ('error' in built) context.skip(`power-cut-fs cannot be built: ${built.error}`);
    const binary = (built as { binary: string }).binary;
    const backing = newDir('power-cut-backing');
    const mountpoint = newDir('power-cut-mount');
    const seed = testSeed('serve-node power cut');
    const random = seededRandom(seed);
    let cutFs: PowerCutFs | undefined;
    try {
      // A random half of the unsynced pages reaches the disk at the cut: the stores must not
      // rely on any of them (LMDB's reused pages, SQLite's unsynced WAL frames).
      cutFs = await mountPowerCutFs(binary, backing, mountpoint, { writeBackSeed: seed });
      mount = cutFs;
    } catch (error) {
      if (FUSE_REQUIRED) throw error;
      context.skip(`power-cut-fs cannot be mounted: ${(error as Error).message}`);
    }
    if (cutFs === undefined) return;

    const text = (words: number) =>
      Array.from({ length: words }, () => random.pick(WORDS)).join(' ');
    logNode = await startLogNode({
      dataDir: newDir('power-cut-log'),
      port: 0,
      partitions: 2,
      logger: silent,
      kafka: { host: '127.0.0.1', port: 0 },
    });
    const kafkaUrl = `kafka://127.0.0.1:${logNode.kafkaPort}`;
    const log = await KafkaLogClient.connect({ bootstrap: [`127.0.0.1:${logNode.kafkaPort}`] });
    logClient = log;
    const end: Record<number, number> = {};
    const append = async (records: { key: string; value: string | null }[]) => {
      for (const partition of [0, 1]) {
        const mine = records.filter((r) => partitionFor(r.key, 2) === partition);
        for (let at = 0; at < mine.length; at += BATCH_RECORDS) {
          const batch: LogRecord[] = mine.slice(at, at + BATCH_RECORDS).map((r) => ({
            key: r.key,
            value: r.value === null ? null : Buffer.from(r.value),
            timestampMs: 1_700_000_000_000,
          }));
          end[partition] = (await log.append(COLLECTION, partition, encodeBatch(batch))).lastOffset;
        }
      }
      return { 0: end[0], 1: end[1] } as Record<number, number>;
    };

    const loaded = await append(
      Array.from({ length: LOADED_DOCS }, (_, i) => ({
        key: `d-${i}`,
        value: JSON.stringify({ title: text(3), body: text(random.int(5, 40)), n: i }),
      })),
    );
    const dataDir = path.join(mountpoint, 'serve');
    const args = ['--data', dataDir, '--port', '0', '--log', kafkaUrl];
    args.push('--store-flush-ms', String(STORE_FLUSH_MS));
    serveProcess = await spawnNode('serve-node', args, { waitReady: false });
    let serve = new HttpServeClient(serveProcess.url);
    expect(await everyDocument(serve, loaded)).toHaveLength(LOADED_DOCS);

    // A flush after the load was applied: the sync point (written under a new name, then renamed)
    // changes inode. The tail and the cut then come long before the next flush, unless the
    // machine is very slow: that is checked after the cut.
    const syncPoint = path.join(storesDir(path.join(backing, 'serve')), 'docs.mdb-sync-point');
    const flushedBefore = fs.statSync(syncPoint).ino;
    for (let polls = 0; fs.statSync(syncPoint).ino === flushedBefore; polls++) {
      expect(polls, 'a flush within two intervals').toBeLessThan((2 * STORE_FLUSH_MS) / 10);
      await sleep(10);
    }
    const flushedAfterLoad = fs.statSync(syncPoint).ino;
    // Many small commits, each applied before the next append (a strong read waits for it): LMDB
    // then frees and reuses pages commit after commit, which must spare the sync point's.
    let tail: Record<number, number> = loaded;
    for (let step = 0; step < TAIL_RECORDS / TAIL_STEP_RECORDS; step++) {
      tail = await append(
        Array.from({ length: TAIL_STEP_RECORDS }, (_, i) => {
          const k = random.int(0, LOADED_DOCS + TAIL_RECORDS);
          if (i % 5 === 0) return { key: `d-${k}`, value: null };
          return {
            key: `d-${k}`,
            value: JSON.stringify({ title: `tail ${text(2)}`, body: text(10), n: k }),
          };
        }),
      );
      await serve.get(COLLECTION, 'd-0', { waitFor: tail, waitMs: 10_000 });
    }
    const beforeCut = await everyDocument(serve, tail);
    cutFs.cut();
    await serveProcess.kill('SIGKILL');
    await cutFs.unmount();
    // Nothing reaches the disk after the cut, renames included: a flush during the tail shows here.
    const flushedDuringTail = fs.statSync(syncPoint).ino !== flushedAfterLoad;

    // The reboot: the marker the node keeps beside open stores names another boot now.
    const stores = storesDir(path.join(backing, 'serve'));
    fs.writeFileSync(path.join(stores, 'unflushed-boot-id'), 'a-boot-before-the-power-cut\n');
    mount = await mountPowerCutFs(binary, backing, mountpoint);
    serveProcess = await spawnNode('serve-node', args, { waitReady: false });
    serve = new HttpServeClient(serveProcess.url);
    const status = await serve.status();
    expect(status.lastRebuild).toBeUndefined();
    // LMDB at its sync point, the flush before the tail (or one during it, on a slow machine);
    // the search store at that flush or past it (unsynced WAL frames that reached the disk whole):
    // the tail alone is replayed, LMDB first catching up with the search store.
    const resumed = status.lastResume?.checkpoints.filter((c) => c.topic === COLLECTION) ?? [];
    console.info(
      `resumed at ${JSON.stringify(resumed)}; the tail ended at ${JSON.stringify(tail)}` +
        (flushedDuringTail ? '; a flush came during the tail' : ''),
    );
    expect(resumed.map((c) => c.partition)).toEqual([0, 1]);
    for (const c of resumed) {
      if (!flushedDuringTail) expect(c.docs).toBe(loaded[c.partition] + 1);
      expect(c.docs).toBeGreaterThanOrEqual(loaded[c.partition] + 1);
      expect(c.search).toBeGreaterThanOrEqual(c.docs as number);
      expect(c.search).toBeLessThanOrEqual(tail[c.partition] + 1);
    }

    const afterCut = await everyDocument(serve, tail);
    expect(afterCut).toEqual(beforeCut);
    reference = await startServeNode({
      dataDir: newDir('power-cut-reference'),
      logUrls: [kafkaUrl],
      logger: silent,
    });
    const rebuilt = new HttpServeClient(reference.url);
    expect(afterCut).toEqual(await everyDocument(rebuilt, tail));
    expect(await everySearch(serve)).toEqual(await everySearch(rebuilt));
  });
});
