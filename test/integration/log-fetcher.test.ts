// Proves that a serve-node's fetcher, tailing a real log-node into real stores, applies every
// record; tells of each commit only which topic-partitions moved: that list is posted to the
// read threads, and a read's bytes in it (the slices' batches, views of the whole answer) were
// copied whole to every read thread at every commit (about 1 ms of the apply thread a post of a
// 4 MiB answer, and the same again on each read thread); and asks the log for little at first,
// doubling at each read up to its bound, so a replay's first answer comes in soon. And that a
// topic dropped and tailed again while an answer read of its old incarnation is still being
// applied slice by slice gets none of that answer's later slices: they would land in the new
// incarnation's stores at the old offsets and skip the new records below them.
import { afterAll, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { openLogNode, type OpenLogNode } from '../../log-node/index.js';
import { encodeBatch } from '../../shared/batch-codec.js';
import type { LogClient, TopicPartition } from '../../shared/log-api.js';
import { createLogger } from '../../shared/logger.js';
import { LogFetcher } from '../../serve-node/log-fetcher.js';
import { Replica } from '../../serve-node/replica.js';
import { DEFAULT_LIMITS } from '../../serve-node/config.js';
import { tempDir, type TempDir } from '../harness/index.js';

const PARTITIONS = 2;
const BATCHES = 20;
const RECORDS_A_BATCH = 50;
const TEXT_BYTES = 2_000;
const APPLIED_WAIT_MS_MAX = 30_000;
const POLL_MS = 20;
const READ_BYTES_MIN = 16 * 1024;
const READ_BYTES_MAX = 100 * 1024;
/** The dropped incarnation's records, many slices of one answer; the new one's, fewer. */
const OLD_RECORDS = 2_000;
const NEW_RECORDS = 2 * RECORDS_A_BATCH;

const logger = createLogger('log-fetcher-test', process.env.TAILBASE_LOG_LEVEL ?? 'silent');
const dirs: TempDir[] = [];
const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close();
  for (const dir of dirs) dir.cleanup();
});

describe('log fetcher', () => {
  it('applies no slice of an answer read before the topic was dropped to the topic tailed again', async () => {
    const logDir = tempDir('fetcher-again-log');
    const storeDir = tempDir('fetcher-again-stores');
    dirs.push(logDir, storeDir);
    const log: OpenLogNode = await openLogNode({ dataDir: logDir.path, partitions: 1, logger });
    closers.push(() => log.stop());
    const append = async (prefix: string, count: number) => {
      for (let base = 0; base < count; base += RECORDS_A_BATCH) {
        const records = Array.from({ length: RECORDS_A_BATCH }, (_, i) => ({
          key: `${prefix}-${base + i}`,
          value: Buffer.from(JSON.stringify({ n: base + i })),
          timestampMs: 1,
        }));
        await log.client.append('docs', 0, encodeBatch(records));
      }
    };
    await log.client.ensureTopic('docs');
    await append('old', OLD_RECORDS);
    const replica = new Replica(storeDir.path);
    closers.push(() => replica.close());
    // Applying stops after the first slice of the old incarnation's answer, until released.
    const gate: { paused: Promise<void> | null; release: (() => void) | null } = {
      paused: null,
      release: null,
    };
    const fetcher = new LogFetcher({
      partitions: [0],
      log: log.client,
      replica: () => replica,
      // One answer holds every old record, applied in many slices.
      logReadBytesMax: 4 * 1024 * 1024,
      logReadBytesMin: 4 * 1024 * 1024,
      logWaitMs: 100,
      applySliceMsMax: DEFAULT_LIMITS.applySliceMsMax,
      applySliceRecordsMax: RECORDS_A_BATCH,
      applySliceBytesMax: 4 * 1024 * 1024,
      applySliceRecordsMin: 10,
      applySliceBytesMin: 1024,
      applyLingerMs: 0,
      applyLingerIdleMs: 0,
      retryMsMax: 1_000,
      logger,
      readsWaiting: () => false,
      onApplied: () => {
        if (gate.release === null) gate.paused = new Promise((resolve) => (gate.release = resolve));
      },
      onOutOfRange: () => undefined,
      rebuilding: false,
      applyPaused: () => gate.paused,
    });
    closers.push(() => fetcher.stop());
    fetcher.tail('docs', [0]);
    const startedMs = Date.now();
    while (gate.release === null && Date.now() - startedMs < APPLIED_WAIT_MS_MAX) {
      await sleep(POLL_MS);
    }
    const release = gate.release;
    if (release === null) throw new Error(`no slice applied within ${APPLIED_WAIT_MS_MAX} ms`);
    expect(replica.applied('docs', 0)).toBeLessThan(OLD_RECORDS);
    // Dropped in the log and created again, then dropped from the stores and tailed again, as
    // the serve-node does once the drop is marked; the rest of the old answer waits meanwhile.
    await log.client.deleteTopic('docs');
    await log.client.ensureTopic('docs');
    await append('new', NEW_RECORDS);
    fetcher.untail('docs');
    replica.beginDrop('docs');
    fetcher.tail('docs', [0]);
    gate.paused = null;
    release();
    while (
      replica.applied('docs', 0) < NEW_RECORDS &&
      Date.now() - startedMs < APPLIED_WAIT_MS_MAX
    ) {
      await sleep(POLL_MS);
    }
    expect(replica.applied('docs', 0)).toBe(NEW_RECORDS);
    const keys = replica.docs.scan('docs', {}, OLD_RECORDS).items.map((doc) => doc.key);
    expect(keys.sort()).toEqual(Array.from({ length: NEW_RECORDS }, (_, i) => `new-${i}`).sort());
  });

  it('applies every record and tells of each commit the topic-partitions alone', async () => {
    const logDir = tempDir('fetcher-log');
    const storeDir = tempDir('fetcher-stores');
    dirs.push(logDir, storeDir);
    const log: OpenLogNode = await openLogNode({
      dataDir: logDir.path,
      partitions: PARTITIONS,
      logger,
    });
    closers.push(() => log.stop());
    await log.client.ensureTopic('docs');
    for (let partition = 0; partition < PARTITIONS; partition++) {
      for (let b = 0; b < BATCHES; b++) {
        const records = Array.from({ length: RECORDS_A_BATCH }, (_, i) => ({
          key: `p${partition}-${b}-${i}`,
          value: Buffer.from(JSON.stringify({ text: `word${i} `.repeat(TEXT_BYTES / 8) })),
          timestampMs: 1,
        }));
        await log.client.append('docs', partition, encodeBatch(records));
      }
    }
    const replica = new Replica(storeDir.path);
    closers.push(() => replica.close());
    const told: TopicPartition[][] = [];
    // The real client, each read's max_bytes noted on the way.
    const maxBytes: number[] = [];
    const client: LogClient = Object.create(log.client, {
      fetch: {
        value: (...args: Parameters<LogClient['fetch']>) => {
          maxBytes.push(args[1]?.maxBytes ?? 0);
          return log.client.fetch(...args);
        },
      },
    });
    const fetcher = new LogFetcher({
      partitions: [0, 1],
      log: client,
      replica: () => replica,
      logReadBytesMax: READ_BYTES_MAX,
      logReadBytesMin: READ_BYTES_MIN,
      logWaitMs: 100,
      // Small slices: several commits, each told.
      applySliceMsMax: DEFAULT_LIMITS.applySliceMsMax,
      applySliceRecordsMax: 100,
      applySliceBytesMax: 64 * 1024,
      applySliceRecordsMin: 10,
      applySliceBytesMin: 16 * 1024,
      applyLingerMs: 0,
      applyLingerIdleMs: 0,
      retryMsMax: 1_000,
      logger,
      readsWaiting: () => false,
      onApplied: (moved) => told.push(structuredClone([...moved])),
      onOutOfRange: () => undefined,
      rebuilding: true,
      applyPaused: () => null,
    });
    closers.push(() => fetcher.stop());
    fetcher.tail('docs', [0, 1]);
    const endOffset = BATCHES * RECORDS_A_BATCH;
    const startedMs = Date.now();
    while (
      [0, 1].some((p) => replica.applied('docs', p) < endOffset) &&
      Date.now() - startedMs < APPLIED_WAIT_MS_MAX
    ) {
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    expect([0, 1].map((p) => replica.applied('docs', p))).toEqual([endOffset, endOffset]);
    expect(told.length).toBeGreaterThan(PARTITIONS);
    expect(maxBytes.slice(0, 5)).toEqual([16, 32, 64, 100, 100].map((k) => k * 1024));
    for (const moved of told) {
      for (const tp of moved) expect(Object.keys(tp).sort()).toEqual(['partition', 'topic']);
    }
  });
});
