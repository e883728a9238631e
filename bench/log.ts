/**
 * The log workloads of issue 2, against a real log-node with fsync=always: (a) batches of 1000
 * records of 100-byte values from concurrent producers, (b) single-record appends from 64
 * concurrent producers, where group commit must lift records/s far above the disk's fsync/s.
 * Bodies are encoded once and re-sent as bytes (no producer id, so no idempotence state), so the
 * load client spends its CPU on HTTP, not on encoding.
 */
import { rmSync } from 'node:fs';
import { encodeBatch } from '../shared/batch-codec.js';
import type { LogRecord } from '../shared/batch-codec.js';
import { loadClient, runLoad } from './load.js';
import { spawnLogNode, tailbaseBuilt } from './processes.js';
import { makeBenchDir } from './references.js';
import type { BenchOptions, Ratio, References, WorkloadResult } from './types.js';
import type { WrkResult } from './wrk.js';

const PARTITIONS = 8;
const VALUE_BYTES = 100;
const BATCH_RECORDS = 1000;
const BATCHED_PRODUCERS = 8;
const SINGLE_PRODUCERS = 64;
const BATCHED_TARGET_RECORDS_PER_SEC = 500_000;
const SINGLE_TARGET_RECORDS_PER_SEC = 15_000;
const SINGLE_TARGET_P99_MS = 20;

interface Durations {
  warmupS: number;
  measureS: number;
}

function durations(options: BenchOptions): Durations {
  return options.quick ? { warmupS: 1, measureS: 1 } : { warmupS: 2, measureS: 10 };
}

/** A JSON document of exactly VALUE_BYTES bytes, so MB/s counts what a user stored. */
function value(seed: number): Uint8Array {
  const prefix = `{"n":${seed},"pad":"`;
  const suffix = '"}';
  const pad = 'x'.repeat(VALUE_BYTES - prefix.length - suffix.length);
  return Buffer.from(prefix + pad + suffix, 'utf8');
}

/** The collection topic the benchmark appends to (its first append creates it). */
const BENCH_TOPIC = 'bench';

function records(partition: number, count: number): LogRecord[] {
  const now = Date.now();
  return Array.from({ length: count }, (_, i) => ({
    key: `p${partition}-k${i}`,
    value: value(i),
    timestampMs: now,
  }));
}

function appendTargets(recordsPerBatch: number): { path: string; body: Buffer }[] {
  return Array.from({ length: PARTITIONS }, (_, p) => ({
    path: `/internal/topics/${BENCH_TOPIC}/partitions/${p}/append`,
    body: encodeBatch(records(p, recordsPerBatch)),
  }));
}

async function totalEndOffset(url: string): Promise<number> {
  const response = await fetch(`${url}/internal/offsets`);
  const body = (await response.json()) as { partitions: { topic: string; endOffset: number }[] };
  return body.partitions
    .filter((p) => p.topic === BENCH_TOPIC)
    .reduce((sum, p) => sum + p.endOffset, 0);
}

interface AppendRun {
  name: string;
  description: string;
  recordsPerBatch: number;
  producers: number;
}

interface AppendMeasurement {
  result: WrkResult;
  batchBytes: number;
  peakRssBytes: number;
  cpuSeconds: number;
  /** Records in the log at the end, against records acknowledged over warm-up and run. */
  recordsInLog: number;
  recordsAcked: number;
}

export async function measureAppends(
  run: AppendRun,
  options: BenchOptions,
): Promise<AppendMeasurement> {
  const dataDir = makeBenchDir('log');
  const node = await spawnLogNode(dataDir, PARTITIONS);
  try {
    const targets = appendTargets(run.recordsPerBatch);
    const load = {
      baseUrl: node.url,
      method: 'POST' as const,
      targets,
      connections: run.producers,
      threads: 2,
    };
    const { warmupS, measureS } = durations(options);
    const warmup = await runLoad({ ...load, durationS: warmupS });
    const cpuBefore = node.cpuSeconds();
    const result = await runLoad({ ...load, durationS: measureS });
    const cpuSeconds = node.cpuSeconds() - cpuBefore;
    const acked =
      (warmup.requestsPerSec * warmup.durationS + result.requestsPerSec * result.durationS) *
      run.recordsPerBatch;
    return {
      result,
      batchBytes: targets[0].body.length,
      peakRssBytes: node.peakRssBytes(),
      cpuSeconds,
      recordsInLog: await totalEndOffset(node.url),
      recordsAcked: Math.round(acked),
    };
  } finally {
    await node.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

function toResult(
  run: AppendRun,
  m: AppendMeasurement,
  ratios: Ratio[],
  targets: WorkloadResult['targets'],
): WorkloadResult {
  const recordsPerSec = m.result.requestsPerSec * run.recordsPerBatch;
  return {
    group: 'log',
    name: run.name,
    description: run.description,
    throughput: { value: recordsPerSec, unit: 'records/s' },
    latency: m.result.latency,
    figures: {
      mbPerSec: (m.result.requestsPerSec * m.batchBytes) / 1e6,
      valueMbPerSec: (recordsPerSec * VALUE_BYTES) / 1e6,
      batchesPerSec: m.result.requestsPerSec,
      batchBytes: m.batchBytes,
      producers: run.producers,
      partitions: PARTITIONS,
      errorCount: m.result.errors,
      durationS: m.result.durationS,
      logNodeCpuCores: m.cpuSeconds / m.result.durationS,
      recordsAcked: m.recordsAcked,
      recordsInLog: m.recordsInLog,
      client: loadClient(),
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
  const batched: AppendRun = {
    name: 'append batched',
    description: `${BATCH_RECORDS} x ${VALUE_BYTES} B records a batch, ${BATCHED_PRODUCERS} producers, fsync=always`,
    recordsPerBatch: BATCH_RECORDS,
    producers: BATCHED_PRODUCERS,
  };
  const single: AppendRun = {
    name: 'append single-record',
    description: `1 x ${VALUE_BYTES} B record a request, ${SINGLE_PRODUCERS} producers, fsync=always`,
    recordsPerBatch: 1,
    producers: SINGLE_PRODUCERS,
  };
  if (unavailable !== null) {
    return [batched, single].map((run) => skipped(run, unavailable));
  }
  const results: WorkloadResult[] = [];
  const b = await measureAppends(batched, options);
  const bRecords = b.result.requestsPerSec * BATCH_RECORDS;
  const bMb = (b.result.requestsPerSec * b.batchBytes) / 1e6;
  results.push(
    toResult(batched, b, ratio('disk seq write MB/s', bMb, references.seqWriteMbPerSec?.value), [
      {
        name: 'batched records/s',
        goal: `>= ${BATCHED_TARGET_RECORDS_PER_SEC}`,
        met: bRecords >= BATCHED_TARGET_RECORDS_PER_SEC,
      },
    ]),
  );
  const s = await measureAppends(single, options);
  const sRecords = s.result.requestsPerSec;
  results.push(
    toResult(
      single,
      s,
      [
        ...ratio('disk fsync/s', sRecords, references.fsyncPerSec?.value),
        ...ratio('bare hono req/s', sRecords, references.honoReqPerSec?.value),
      ],
      [
        {
          name: 'single-record records/s',
          goal: `>= ${SINGLE_TARGET_RECORDS_PER_SEC}`,
          met: sRecords >= SINGLE_TARGET_RECORDS_PER_SEC,
        },
        {
          name: `ack p99 at ${SINGLE_PRODUCERS} producers`,
          goal: `<= ${SINGLE_TARGET_P99_MS} ms`,
          met: s.result.latency.p99Ms <= SINGLE_TARGET_P99_MS,
        },
      ],
    ),
  );
  return results;
}

function skipped(run: AppendRun, reason: string): WorkloadResult {
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
