/**
 * The log workloads of issue 2, against a real log-node's Kafka listener with fsync=always:
 * (a) batches of 1000 records of 100-byte values from 8 concurrent producers, (b) single-record
 * produces from 64 concurrent producers, where group commit must lift records/s far above the
 * disk's fsync/s. Each producer is one connection re-sending one Produce request encoded once
 * (acks=-1, no producer id, so no idempotence state; bench/kafka-pre-encoded-produce.ts), so the
 * load client spends its CPU on the socket, not on encoding; latency is one sample a request.
 */
import { rmSync } from 'node:fs';
import { createTopic, endOffsets } from './kafka-admin.js';
import {
  encodePartitionBatch,
  type PreEncodedBatch,
  type PreEncodedProduceRun,
  producePreEncoded,
  VALUE_BYTES,
} from './kafka-pre-encoded-produce.js';
import { freePort, spawnLogNode, tailbaseBuilt } from './processes.js';
import { makeBenchDir } from './references.js';
import type { BenchOptions, Ratio, References, WorkloadResult } from './types.js';

const PARTITIONS = 8;
const BATCH_RECORDS = 1000;
const BATCHED_PRODUCERS = 8;
const SINGLE_PRODUCERS = 64;
const BATCHED_TARGET_RECORDS_PER_SEC = 500_000;
const SINGLE_TARGET_RECORDS_PER_SEC = 15_000;
const SINGLE_TARGET_P99_MS = 20;
/** The collection topic the benchmark produces to. */
const BENCH_TOPIC = 'bench';
const CLIENT =
  'pre-encoded Produce v9 requests over raw connections, in the bench process (one thread)';

interface Durations {
  warmupS: number;
  measureS: number;
}

function durations(options: BenchOptions): Durations {
  return options.quick ? { warmupS: 1, measureS: 1 } : { warmupS: 2, measureS: 10 };
}

interface ProduceRun {
  name: string;
  description: string;
  recordsPerBatch: number;
  producers: number;
}

/** Producer i re-sends one batch into partition i % PARTITIONS, its keys in that partition. */
function producerBatches(run: ProduceRun): PreEncodedBatch[] {
  return Array.from({ length: run.producers }, (_, i) => ({
    partition: i % PARTITIONS,
    batch: encodePartitionBatch(`p${i}`, i % PARTITIONS, run.recordsPerBatch, PARTITIONS),
    recordCount: run.recordsPerBatch,
  }));
}

interface ProduceMeasurement {
  result: PreEncodedProduceRun;
  batchBytes: number;
  peakRssBytes: number;
  /** Records in the log at the end, against records acknowledged over warm-up and run. */
  recordsInLog: number;
}

export async function measureProduces(
  run: ProduceRun,
  options: BenchOptions,
): Promise<ProduceMeasurement> {
  const dataDir = makeBenchDir('log');
  const kafkaPort = await freePort();
  const broker = `127.0.0.1:${kafkaPort}`;
  const node = await spawnLogNode(dataDir, PARTITIONS, ['--kafka-port', String(kafkaPort)]);
  try {
    await createTopic(broker, BENCH_TOPIC, PARTITIONS);
    const batches = producerBatches(run);
    const { warmupS, measureS } = durations(options);
    const result = await producePreEncoded(
      node,
      kafkaPort,
      BENCH_TOPIC,
      batches,
      warmupS,
      measureS,
    );
    const recordsInLog = await endOffsets(broker, BENCH_TOPIC);
    if (recordsInLog !== result.recordsAckedAll) {
      throw new Error(
        `${run.name}: ${result.recordsAckedAll} records acknowledged, the log holds ${recordsInLog}`,
      );
    }
    return {
      result,
      batchBytes: batches[0].batch.length,
      peakRssBytes: node.peakRssBytes(),
      recordsInLog,
    };
  } finally {
    await node.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

function toResult(
  run: ProduceRun,
  m: ProduceMeasurement,
  ratios: Ratio[],
  targets: WorkloadResult['targets'],
): WorkloadResult {
  const { result } = m;
  const recordsPerSec = result.records / result.durationS;
  const requestsPerSec = recordsPerSec / run.recordsPerBatch;
  return {
    group: 'log',
    name: run.name,
    description: run.description,
    throughput: { value: recordsPerSec, unit: 'records/s' },
    latency: result.latency.summary(),
    figures: {
      mbPerSec: (requestsPerSec * m.batchBytes) / 1e6,
      valueMbPerSec: (recordsPerSec * VALUE_BYTES) / 1e6,
      batchesPerSec: requestsPerSec,
      batchBytes: m.batchBytes,
      producers: run.producers,
      partitions: PARTITIONS,
      errorCount: result.errors,
      durationS: result.durationS,
      logNodeCpuCores: result.nodeCpuSeconds / result.durationS,
      clientCpuCores: result.clientCpuSeconds / result.durationS,
      machineBusyPercent: result.machineBusyPercent,
      recordsAcked: result.recordsAckedAll,
      recordsInLog: m.recordsInLog,
      client: CLIENT,
    },
    ratios,
    peakRssBytes: { 'log-node': m.peakRssBytes },
    targets,
  };
}

function ratio(reference: string, numerator: number, denominator: number | undefined): Ratio[] {
  return denominator ? [{ reference, value: numerator / denominator }] : [];
}

export async function runLogBench(
  options: BenchOptions,
  references: References,
): Promise<WorkloadResult[]> {
  const unavailable = tailbaseBuilt() ? null : 'skipped: not built yet (dist/bin/tailbase.js)';
  const batched: ProduceRun = {
    name: 'append batched',
    description: `${BATCH_RECORDS} x ${VALUE_BYTES} B records a Produce request, ${BATCHED_PRODUCERS} producers (one a partition), acks=-1, fsync=always`,
    recordsPerBatch: BATCH_RECORDS,
    producers: BATCHED_PRODUCERS,
  };
  const single: ProduceRun = {
    name: 'append single-record',
    description: `1 x ${VALUE_BYTES} B record a Produce request, ${SINGLE_PRODUCERS} producers, acks=-1, fsync=always`,
    recordsPerBatch: 1,
    producers: SINGLE_PRODUCERS,
  };
  if (unavailable !== null) {
    return [batched, single].map((run) => skipped(run, unavailable));
  }
  const results: WorkloadResult[] = [];
  const b = await measureProduces(batched, options);
  const bRecords = b.result.records / b.result.durationS;
  const bMb = ((bRecords / BATCH_RECORDS) * b.batchBytes) / 1e6;
  results.push(
    toResult(batched, b, ratio('disk seq write MB/s', bMb, references.seqWriteMbPerSec?.value), [
      {
        name: 'batched records/s',
        goal: `>= ${BATCHED_TARGET_RECORDS_PER_SEC}`,
        met: bRecords >= BATCHED_TARGET_RECORDS_PER_SEC,
      },
    ]),
  );
  const s = await measureProduces(single, options);
  const sRecords = s.result.records / s.result.durationS;
  results.push(
    toResult(single, s, ratio('disk fsync/s', sRecords, references.fsyncPerSec?.value), [
      {
        name: 'single-record records/s',
        goal: `>= ${SINGLE_TARGET_RECORDS_PER_SEC}`,
        met: sRecords >= SINGLE_TARGET_RECORDS_PER_SEC,
      },
      {
        name: `ack p99 at ${SINGLE_PRODUCERS} producers`,
        goal: `<= ${SINGLE_TARGET_P99_MS} ms`,
        met: s.result.latency.summary().p99Ms <= SINGLE_TARGET_P99_MS,
      },
    ]),
  );
  return results;
}

function skipped(run: ProduceRun, reason: string): WorkloadResult {
  return {
    group: 'log',
    name: run.name,
    description: run.description,
    figures: {},
    ratios: [],
    peakRssBytes: {},
    skipped: reason,
  };
}
