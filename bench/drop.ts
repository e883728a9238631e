/**
 * A collection's drop beside another collection of the same size, the two ways a serve-node can
 * take it: `replay` (the stores replaced by replaying the log without the topic, the path drops
 * took before issue 29's drop in place, still what `POST /internal/admin/rebuild` does) and
 * `in-place` (serve-node/collection-drops.ts). For each: how long until the drop is answered,
 * until the other collection is whole again, and what eventual reads of the other collection saw
 * meanwhile (a document count every `READ_EVERY_MS`).
 *
 *   node dist/bench/drop.js [--docs 100000]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { openLogNode } from '../log-node/index.js';
import { startServeNode, type RunningServeNode } from '../serve-node/index.js';
import { encodeBatch, type LogRecord } from '../shared/batch-codec.js';
import { KafkaLogClient } from '../shared/kafka-log/index.js';
import { createLogger } from '../shared/logger.js';
import { partitionFor } from '../shared/partitioner.js';

const BATCH_RECORDS = 2_000;
const PARTITIONS = 2;
const READ_EVERY_MS = 10;
/** A bound on any wait of the run; a run past it fails rather than hang. */
const WAIT_MS_MAX = 30 * 60_000;
const WORDS = 'river stone cloud maple ember quartz harbor lantern meadow falcon'.split(' ');
const silent = createLogger('bench', 'silent');

interface DropFigures {
  mode: 'replay' | 'in-place';
  docs: number;
  /** From the drop's start until the node answered it (replay: once it swapped its stores). */
  answeredMs: number;
  /** From the drop's start until the other collection is whole again. */
  otherWholeMs: number;
  /** Reads of the other collection from the drop's start until it is whole and the drop done. */
  reads: number;
  /** ...of which answered every document of it. */
  readsWhole: number;
  /** The fewest documents of it a read answered. */
  fewestSeen: number;
  /**
   * The longest between two reads' answers (one every 10 ms): the serve-node shares the bench's
   * thread, so a step that holds it shows here.
   */
  readGapMsMax: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function run(mode: DropFigures['mode'], docs: number): Promise<DropFigures> {
  const dir = await mkdtemp(join(process.env.TAILBASE_BENCH_DIR ?? tmpdir(), 'tb-drop-'));
  const log = await openLogNode({
    dataDir: join(dir, 'log'),
    partitions: PARTITIONS,
    logger: silent,
    kafka: { host: '127.0.0.1', port: 0 },
  });
  const broker = `127.0.0.1:${log.kafkaPort}`;
  const client = await KafkaLogClient.connect({ bootstrap: [broker], logger: silent });
  let serve: RunningServeNode | undefined;
  try {
    for (const collection of ['gone', 'other']) {
      for (let from = 0; from < docs; from += BATCH_RECORDS) {
        const byPartition = new Map<number, LogRecord[]>();
        for (let i = from; i < Math.min(from + BATCH_RECORDS, docs); i++) {
          const key = `${collection}-${i}`;
          const title = `${WORDS[i % WORDS.length]} ${WORDS[(i * 7) % WORDS.length]} ${i}`;
          const value = Buffer.from(JSON.stringify({ title, n: i, body: WORDS.join(' ') }));
          const partition = partitionFor(key, PARTITIONS);
          if (!byPartition.has(partition)) byPartition.set(partition, []);
          byPartition.get(partition)!.push({ key, value, timestampMs: Date.now() });
        }
        for (const [partition, records] of byPartition) {
          await client.append(collection, partition, encodeBatch(records));
        }
      }
    }
    serve = await startServeNode({
      dataDir: join(dir, 'serve'),
      port: 0,
      logUrls: [`kafka://${broker}`],
      logger: silent,
    });
    const node = serve.client;
    const count = () => node.countDocuments('other');
    for (let waited = 0; (await count()) < docs || (await node.countDocuments('gone')) < docs;) {
      if (waited > WAIT_MS_MAX) throw new Error(`not applied within ${WAIT_MS_MAX} ms`);
      await sleep(100);
      waited += 100;
    }
    await client.deleteTopic('gone');
    const startMs = performance.now();
    let answeredMs: number | null = null;
    let dropDone = false;
    const drop = (async () => {
      if (mode === 'in-place') {
        await node.dropCollection('gone');
      } else {
        const before = (await node.status()).lastRebuild?.atMs;
        await node.rebuild();
        while ((await node.status()).lastRebuild?.atMs === before) await sleep(1);
      }
      answeredMs = performance.now() - startMs;
      dropDone = true;
    })();
    let reads = 0;
    let readsWhole = 0;
    let fewestSeen = docs;
    let readGapMsMax = 0;
    let lastAnswerMs = startMs;
    let otherWholeMs: number | null = null;
    // Until a read begun after the drop was answered finds the other collection whole.
    for (let wholeAfterDrop = false; !wholeAfterDrop;) {
      if (performance.now() - startMs > WAIT_MS_MAX) throw new Error('the drop did not end');
      const afterDrop = dropDone;
      const seen = await count();
      readGapMsMax = Math.max(readGapMsMax, performance.now() - lastAnswerMs);
      lastAnswerMs = performance.now();
      reads += 1;
      fewestSeen = Math.min(fewestSeen, seen);
      if (seen === docs) {
        readsWhole += 1;
        otherWholeMs ??= performance.now() - startMs;
        wholeAfterDrop = afterDrop;
      } else {
        otherWholeMs = null;
      }
      if (!wholeAfterDrop) await sleep(READ_EVERY_MS);
    }
    await drop;
    return {
      mode,
      docs,
      answeredMs: Math.round(answeredMs!),
      otherWholeMs: Math.round(otherWholeMs!),
      reads,
      readsWhole,
      fewestSeen,
      readGapMsMax: Math.round(readGapMsMax),
    };
  } finally {
    await serve?.stop();
    client.close();
    await log.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

const { values } = parseArgs({ options: { docs: { type: 'string', default: '100000' } } });
const docs = Number(values.docs);
if (!Number.isSafeInteger(docs) || docs < 1) throw new Error('--docs is a positive integer');
for (const mode of ['replay', 'in-place'] as const) {
  console.log(JSON.stringify(await run(mode, docs)));
}
