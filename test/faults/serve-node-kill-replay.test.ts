// Proves crash recovery of the apply path: a serve-node process killed with SIGKILL in the middle
// of replaying 200,000 records restarts from its checkpoints (its stores kept, though they commit
// without fsync) and converges, and every document (and its search index rows) equals the last
// write of its key in the log. The log is reached by the Kafka protocol only.
import { afterAll, describe, expect, it } from 'vitest';
import { encodeBatch, type LogRecord } from '../../shared/batch-codec.js';
import { KafkaLogClient } from '../../shared/kafka-log/index.js';
import { createLogger } from '../../shared/logger.js';
import { partitionFor } from '../../shared/partitioner.js';
import { HttpServeClient } from '../../shared/http-serve-client.js';
import { startLogNode, type RunningLogNode } from '../../log-node/index.js';
import {
  appliedThrough,
  sleep,
  spawnNode,
  tempDir,
  type SpawnedNode,
  type TempDir,
} from '../harness/index.js';

const KEYS = 20_000;
const VERSIONS = 10;
const BATCH_RECORDS = 2_000;
const WORDS = 'river stone cloud maple ember quartz harbor lantern meadow falcon'.split(' ');

const dirs: TempDir[] = [];
let logNode: RunningLogNode | undefined;
let serveProcess: SpawnedNode | undefined;

afterAll(async () => {
  await serveProcess?.kill();
  await logNode?.stop();
  for (const dir of dirs) dir.cleanup();
});

/** The last write of key k: version VERSIONS-1, or a tombstone for every tenth key. */
const isDeleted = (k: number) => k % 10 === 0;

function valueOf(k: number, version: number): Buffer | null {
  if (version === VERSIONS - 1 && isDeleted(k)) return null;
  const text = Array.from({ length: 8 }, (_, i) => WORDS[(k + i * version) % WORDS.length]);
  return Buffer.from(JSON.stringify({ k, version, text: `${text.join(' ')} v${version}` }));
}

describe('serve-node killed mid-replay', () => {
  it('converges after restart to the last write of every key', async () => {
    const logDir = tempDir('kill-log');
    const serveDir = tempDir('kill-serve');
    dirs.push(logDir, serveDir);
    logNode = await startLogNode({
      dataDir: logDir.path,
      port: 0,
      partitions: 2,
      logger: createLogger('log-node', 'silent'),
      kafka: { host: '127.0.0.1', port: 0 },
    });
    const broker = `127.0.0.1:${logNode.kafkaPort}`;
    const log = await KafkaLogClient.connect({ bootstrap: [broker] });
    const partitionOf = (k: number) => partitionFor(`item-${k}`, 2);
    const keysOf = [0, 1].map((partition) =>
      Array.from({ length: KEYS }, (_, k) => k).filter((k) => partitionOf(k) === partition),
    );
    const lastOffset = new Map<number, number>();
    const endOffsets: Record<number, number> = {};
    for (let version = 0; version < VERSIONS; version++) {
      for (const partition of [0, 1]) {
        for (let first = 0; first < keysOf[partition].length; first += BATCH_RECORDS) {
          const keys = keysOf[partition].slice(first, first + BATCH_RECORDS);
          const records: LogRecord[] = keys.map((k) => ({
            key: `item-${k}`,
            value: valueOf(k, version),
            timestampMs: 1_700_000_000_000,
          }));
          const { baseOffset, lastOffset: last } = await log.append(
            'items',
            partition,
            encodeBatch(records),
          );
          keys.forEach((k, i) => lastOffset.set(k, baseOffset + i));
          endOffsets[partition] = last;
        }
      }
    }
    log.close();
    const total = KEYS * VERSIONS;
    // The index checks below count every match: the total must be exact past the default bound.
    const args = ['--data', serveDir.path, '--port', '0', '--log', `kafka://${broker}`];
    args.push('--search-total-exact-max', String(total));
    serveProcess = await spawnNode('serve-node', [...args, '--log-read-bytes-max', '65536'], {
      waitReady: false,
    });
    let client = new HttpServeClient(serveProcess.url);
    let appliedAtKill = 0;
    for (let polls = 0; polls < 2_000; polls++) {
      const status = await client.status();
      appliedAtKill = status.partitions
        .filter((p) => p.topic === 'items')
        .reduce((sum, p) => sum + p.applied, 0);
      if (appliedAtKill >= total * 0.3) break;
      await sleep(10);
    }
    await serveProcess.kill('SIGKILL');
    expect(appliedAtKill).toBeGreaterThan(0);
    expect(appliedAtKill).toBeLessThan(total);

    serveProcess = await spawnNode('serve-node', args, { waitReady: false });
    client = new HttpServeClient(serveProcess.url);
    const waitFor = { 0: endOffsets[0], 1: endOffsets[1] };
    // The replay takes what the machine's load makes it take (a read's wait is bounded by the
    // node's waitMsMax): it must keep going to the end, whatever its rate.
    await appliedThrough(client, 'items', waitFor);
    let after: string | undefined;
    const seen = new Set<number>();
    for (let page = 0; page < 100; page++) {
      const result = await client.scan('items', { after, limit: 1_000, waitFor });
      for (const item of result.items) {
        const k = Number(item.key.slice('item-'.length));
        expect(isDeleted(k), item.key).toBe(false);
        expect(JSON.parse(item.json)).toEqual(JSON.parse(valueOf(k, VERSIONS - 1)!.toString()));
        expect(item.offset).toBe(lastOffset.get(k));
        expect(item.partition).toBe(partitionOf(k));
        seen.add(k);
      }
      if (!result.more) break;
      after = result.items[result.items.length - 1].key;
    }
    expect(seen.size).toBe(KEYS - KEYS / 10);
    // Every live document is indexed once, with its last version's text only.
    expect((await client.search('items', { q: `v${VERSIONS - 1}`, limit: 1 })).total).toBe(
      seen.size,
    );
    expect((await client.search('items', { q: `v${VERSIONS - 2}`, limit: 1 })).total).toBe(0);
    const status = await client.status();
    expect(status.partitions.filter((p) => p.topic === 'items').map((p) => p.applied)).toEqual([
      endOffsets[0] + 1,
      endOffsets[1] + 1,
    ]);
    // Killed within this boot: the page cache kept every commit, so the stores were kept too.
    expect(status.lastRebuild).toBeUndefined();
  });
});
