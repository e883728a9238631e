/**
 * The log-node's batched append in process: the store's own append (each partition's group
 * commit, fsync=always, the active segment written O_DSYNC) with no transport in front of it,
 * the bound any transport to the log can reach. One producer a partition appends the same
 * pre-encoded batch again and again, each awaiting its ack, as the Kafka group's pre-encoded
 * Produce requests do over the listener.
 */
import { rmSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { openLogNode } from '../log-node/index.js';
import { createLogger } from '../shared/logger.js';
import { LatencyHistogram } from './latency-histogram.js';
import { makeBenchDir } from './references.js';

export interface InProcessAppendRun {
  topic: string;
  /** One batch a partition, appended by that partition's producer. */
  batches: readonly Buffer[];
  recordsPerBatch: number;
  warmupS: number;
  measureS: number;
}

export interface InProcessAppendResult {
  records: number;
  durationS: number;
  errors: number;
  latency: LatencyHistogram;
  /** This process's CPU over the window: the log and its callers, no transport. */
  cpuSeconds: number;
}

export async function measureInProcessAppends(
  run: InProcessAppendRun,
): Promise<InProcessAppendResult> {
  const dataDir = makeBenchDir('append-in-process');
  const node = await openLogNode({
    dataDir,
    partitions: run.batches.length,
    fsync: 'always',
    logger: createLogger('log-node', 'silent'),
  });
  try {
    let recording = false;
    let stop = false;
    let records = 0;
    let errors = 0;
    const latency = new LatencyHistogram();
    const producer = async (partition: number) => {
      while (!stop) {
        const sent = performance.now();
        try {
          await node.client.append(run.topic, partition, run.batches[partition]);
          if (recording) {
            latency.recordMs(performance.now() - sent);
            records += run.recordsPerBatch;
          }
        } catch {
          if (recording) errors += 1;
        }
      }
    };
    const producers = run.batches.map((_, partition) => producer(partition));
    await new Promise((resolve) => setTimeout(resolve, run.warmupS * 1000));
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    recording = true;
    await new Promise((resolve) => setTimeout(resolve, run.measureS * 1000));
    recording = false;
    const cpu = process.cpuUsage(cpuBefore);
    const durationS = (performance.now() - started) / 1000;
    stop = true;
    await Promise.all(producers);
    return { records, durationS, errors, latency, cpuSeconds: (cpu.user + cpu.system) / 1e6 };
  } finally {
    await node.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
