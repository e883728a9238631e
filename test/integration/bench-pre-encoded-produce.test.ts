// Proves the bench's pre-encoded Produce load (bench/kafka-pre-encoded-produce.ts) against a real
// log-node process (dist/, fsync=always): every acknowledged record is in the log and nothing
// else is, an answer with an error code counts as an error and never as acknowledged records,
// and one latency sample is taken a request answered in the window.
import { afterEach, describe, expect, it } from 'vitest';
import { createTopic, endOffsets } from '../../bench/kafka-admin.js';
import { encodePartitionBatch, producePreEncoded } from '../../bench/kafka-pre-encoded-produce.js';
import { readCpuSeconds, readPeakRssBytes, type RunningProcess } from '../../bench/processes.js';
import { freePort, spawnNode, tempDir, type TempDir } from '../harness/index.js';

const PARTITIONS = 4;
const TOPIC = 'bench';
const RECORDS = 10;
const WARMUP_S = 0.2;
const MEASURE_S = 0.5;

let node: RunningProcess | null = null;
let dir: TempDir | null = null;
afterEach(async () => {
  await node?.stop();
  dir?.cleanup();
  node = null;
  dir = null;
});

describe('pre-encoded Produce load', () => {
  it('counts what the log holds as acknowledged, and a refused batch as an error', async () => {
    dir = tempDir('bench-produce');
    const kafkaPort = await freePort();
    const broker = `127.0.0.1:${kafkaPort}`;
    const spawned = await spawnNode(
      'log-node',
      ['--data', dir.path, '--partitions', String(PARTITIONS), '--kafka-port', String(kafkaPort)],
      { env: { TAILBASE_FSYNC: 'always' } },
    );
    node = {
      url: spawned.url,
      pid: spawned.pid,
      peakRssBytes: () => readPeakRssBytes(spawned.pid),
      resetPeakRss: () => undefined,
      cpuSeconds: () => readCpuSeconds(spawned.pid),
      stop: async () => {
        await spawned.stop();
      },
    };
    await createTopic(broker, TOPIC, PARTITIONS);
    const batches = [
      {
        partition: 0,
        batch: encodePartitionBatch('a', 0, RECORDS, PARTITIONS),
        recordCount: RECORDS,
      },
      {
        partition: 1,
        batch: encodePartitionBatch('b', 1, RECORDS, PARTITIONS),
        recordCount: RECORDS,
      },
      // Keys of partition 1 produced into partition 2: the listener refuses the batch.
      {
        partition: 2,
        batch: encodePartitionBatch('c', 1, RECORDS, PARTITIONS),
        recordCount: RECORDS,
      },
    ];
    const run = await producePreEncoded(node, kafkaPort, TOPIC, batches, WARMUP_S, MEASURE_S);
    expect(run.records).toBeGreaterThan(0);
    expect(run.records % RECORDS).toBe(0);
    expect(run.errors).toBeGreaterThan(0);
    expect(run.latency.summary().count).toBe(run.records / RECORDS);
    expect(run.recordsAckedAll).toBeGreaterThanOrEqual(run.records);
    expect(await endOffsets(broker, TOPIC)).toBe(run.recordsAckedAll);
    expect(run.durationS).toBeGreaterThanOrEqual(MEASURE_S * 0.9);
  });
});
