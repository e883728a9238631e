// Proves a read thread's handles, once refreshed after a commit, read a snapshot that includes
// it: a reader on another thread reads a document and its applied offset, the writer commits a
// new version, and the reader, told of it within the same synchronous turn (no event-loop turn
// lets lmdb-js move its snapshot by itself), refreshes and reads the new version and offset.
// And that a settings record is never in effect on a read thread before the settings it reads
// are: the reader refreshes, the writer applies settings whose re-index is still to run, and the
// reader's first look (its LMDB snapshot taken then, after the builds it read at the refresh)
// must not count the record as applied while the collection still reads with the old settings.
import { Worker } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS } from '../../serve-node/config.js';
import { Replica } from '../../serve-node/replica.js';
import { SETTINGS_TOPIC } from '../../shared/topics.js';
import { ReplicaFeed } from '../harness/replica-feed.js';
import { tempDir, type TempDir } from '../harness/temp-dir.js';

const READ_REPLICA_JS = pathToFileURL(join(process.cwd(), 'dist/serve-node/read-replica.js')).href;
/** The reader's steps, signalled through one shared word. */
const READ_BEFORE = 1;
const WRITTEN = 2;
const WAIT_MS_MAX = 10_000;

/** Reads, waits for the writer's commit without leaving its turn, refreshes, reads again. */
const READER = `
const { workerData, parentPort } = require('node:worker_threads');
(async () => {
  const { ReadReplica } = await import(workerData.module);
  const reader = new ReadReplica(workerData.dir, workerData.limits);
  const step = new Int32Array(workerData.step);
  const look = () => ({
    applied: reader.applied('books', 0),
    version: JSON.parse(reader.docs.get('books', 'a').json).version,
  });
  const before = look();
  Atomics.store(step, 0, ${READ_BEFORE});
  Atomics.notify(step, 0);
  Atomics.wait(step, 0, ${READ_BEFORE}, ${WAIT_MS_MAX});
  reader.refresh();
  const after = look();
  await reader.close();
  parentPort.postMessage({ before, after });
})().catch((error) => parentPort.postMessage({ error: String(error) }));
`;

/** Refreshes, lets the writer commit settings in the same turn, then asks what is in effect. */
const SETTINGS_READER = `
const { workerData, parentPort } = require('node:worker_threads');
(async () => {
  const { ReadReplica } = await import(workerData.module);
  const reader = new ReadReplica(workerData.dir, workerData.limits);
  reader.refresh();
  const step = new Int32Array(workerData.step);
  Atomics.store(step, 0, ${READ_BEFORE});
  Atomics.notify(step, 0);
  Atomics.wait(step, 0, ${READ_BEFORE}, ${WAIT_MS_MAX});
  const settingsApplied = reader.settingsApplied('books');
  const sortable = reader.search.settingsOf('books').sortable;
  await reader.close();
  parentPort.postMessage({ settingsApplied, sortable });
})().catch((error) => parentPort.postMessage({ error: String(error) }));
`;

let dir: TempDir | undefined;
let replica: Replica | undefined;
afterEach(async () => {
  await replica?.close();
  dir?.cleanup();
});

describe("a read thread's replica", () => {
  it('reads, after refresh(), the commit it was told of', async () => {
    dir = tempDir('read-replica');
    const writer = new Replica(dir.path);
    replica = writer;
    const feed = new ReplicaFeed(() => writer);
    feed.apply('books', 0, [['a', { version: 0 }]]);
    const { before, after, error } = await readAround(READER, dir.path, () =>
      feed.apply('books', 0, [['a', { version: 1 }]]),
    );
    expect(error).toBeUndefined();
    expect(before).toEqual({ applied: 1, version: 0 });
    expect(after).toEqual({ applied: 2, version: 1 });
  });

  it('counts a settings record applied only once the reads use its settings', async () => {
    dir = tempDir('read-replica-settings');
    const writer = new Replica(dir.path);
    replica = writer;
    const feed = new ReplicaFeed(() => writer);
    feed.apply('books', 0, [
      ['a', { n: 1 }],
      ['b', { n: 2 }],
    ]);
    const settingsOffset = feed.nextOffset(SETTINGS_TOPIC, 0) ?? 0;
    const { settingsApplied, sortable, error } = await readAround(SETTINGS_READER, dir.path, () =>
      feed.settings('books', { sortable: ['n'] }),
    );
    expect(error).toBeUndefined();
    // The re-index the record started has not run (no background steps here): not in effect yet.
    expect(writer.search.buildOf('books')).toBeDefined();
    expect(sortable).toEqual([]);
    expect(settingsApplied).toBeLessThanOrEqual(settingsOffset);
  });
});

/**
 * Runs `script` on a thread of its own over the store in `dir`; `write` runs on this thread
 * while the reader waits inside one synchronous turn, between its two signals.
 */
async function readAround(
  script: string,
  dir: string,
  write: () => void,
): Promise<Record<string, unknown>> {
  const step = new SharedArrayBuffer(4);
  const worker = new Worker(script, {
    eval: true,
    workerData: { module: READ_REPLICA_JS, dir, step, limits: DEFAULT_LIMITS },
  });
  const answer = new Promise<Record<string, unknown>>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  const word = new Int32Array(step);
  const deadline = Date.now() + WAIT_MS_MAX;
  while (Atomics.load(word, 0) !== READ_BEFORE && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  expect(Atomics.load(word, 0)).toBe(READ_BEFORE);
  write();
  Atomics.store(word, 0, WRITTEN);
  Atomics.notify(word, 0);
  try {
    return await answer;
  } finally {
    await worker.terminate();
  }
}
