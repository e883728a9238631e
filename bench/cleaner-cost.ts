/**
 * What the log cleaner costs as a compacted log grows (issue 26): `node dist/bench/cleaner-cost.js
 * [--mib N] [--pass-every-mib S] [--build other/dist]` appends N MiB of keyed records (random keys
 * of a fixed key space, so some are updates) to a compacted topic of 8 partitions with small
 * segments, in a log-node in this process, and runs one cleaner pass after every S MiB, as the
 * cleaner's interval would under a steady load. Nothing else runs during a pass, so the process's
 * CPU time across it is the pass's. Prints each pass and the cleaner's CPU time per appended MiB,
 * and the bytes it read (read calls, page cache or disk).
 * `--build` takes the log-node of another checkout's dist/ (the base commit's), to compare builds
 * in the same minutes.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { encodeBatch, type LogRecord } from '../shared/batch-codec.js';
import { createLogger } from '../shared/logger.js';
import { makeBenchDir, removeBenchDirs } from './references.js';
import { seededRandom } from './seeded-random.js';

const MiB = 1024 * 1024;
const TOPIC = 'cleaned';
const RECORDS_PER_BATCH = 100;

interface Options {
  mib: string;
  passEveryMib: string;
  partitions: string;
  segmentBytes: string;
  keys: string;
  recordBytes: string;
  build?: string;
}

/** The parts of a log-node this bench drives, as every build since the sliced cleaner has them. */
interface LogNodeModule {
  openLogNode(options: Record<string, unknown>): Promise<{
    client: { append(topic: string, partition: number, batch: Buffer): Promise<unknown> };
    node: { status(): { partitions: { topic: string; sizeBytes: number }[] } };
    cleaner: { runOnce(): Promise<{ topic: string; segmentsCompacted: number }[]> };
    stop(): Promise<void>;
  }>;
}

/** Bytes this process has read by read calls, page cache or disk (Linux's /proc/self/io rchar). */
function bytesReadByProcess(): number {
  const io = readFileSync('/proc/self/io', 'utf8');
  return Number(/^rchar: (\d+)$/m.exec(io)?.[1] ?? 0);
}

async function main(): Promise<void> {
  const opts = new Command()
    .option('--mib <n>', 'MiB of records to append', '96')
    .option('--pass-every-mib <n>', 'MiB appended between cleaner passes', '8')
    .option('--partitions <n>', 'partitions of the topic', '8')
    .option('--segment-bytes <n>', 'segmentBytesMax', String(MiB))
    .option('--keys <n>', 'distinct keys the records are drawn from', '400000')
    .option('--record-bytes <n>', 'bytes of a record value', '200')
    .option('--build <dist>', "another build's dist/ directory (default: this one)")
    .parse(process.argv)
    .opts<Options>();
  const [totalMib, everyMib, partitions] = [opts.mib, opts.passEveryMib, opts.partitions].map(
    Number,
  );
  const [keys, recordBytes] = [Number(opts.keys), Number(opts.recordBytes)];
  const logNodeDir = opts.build
    ? path.resolve(opts.build, 'log-node')
    : fileURLToPath(new URL('../log-node/', import.meta.url));
  const { openLogNode } = (await import(path.join(logNodeDir, 'index.js'))) as LogNodeModule;
  const running = await openLogNode({
    dataDir: makeBenchDir('cleaner-cost'),
    partitions,
    segmentBytesMax: Number(opts.segmentBytes),
    batchBytesMax: Number(opts.segmentBytes),
    fsync: 'interval',
    cleanerIntervalMs: 3_600_000,
    logger: createLogger('bench', 'silent'),
  });
  const random = seededRandom(20261205);
  const pad = 'x'.repeat(Math.max(0, recordBytes - 40));
  const batchOf = (): Buffer => {
    const records: LogRecord[] = Array.from({ length: RECORDS_PER_BATCH }, () => {
      const key = `doc-${Math.floor(random() * keys)}`;
      return { key, value: Buffer.from(JSON.stringify({ key, pad })), timestampMs: Date.now() };
    });
    return encodeBatch(records);
  };
  let appendedBytes = 0;
  let cleanerCpuUs = 0;
  let cleanerReadBytes = 0;
  try {
    for (let pass = 1; appendedBytes < totalMib * MiB; pass++) {
      const target = Math.min(totalMib, pass * everyMib) * MiB;
      while (appendedBytes < target) {
        const batches = Array.from({ length: partitions }, batchOf);
        await Promise.all(batches.map((batch, p) => running.client.append(TOPIC, p, batch)));
        appendedBytes += batches.reduce((sum, batch) => sum + batch.length, 0);
      }
      const readBefore = bytesReadByProcess();
      const cpuBefore = process.cpuUsage();
      const started = performance.now();
      const summaries = await running.cleaner.runOnce();
      const cpu = process.cpuUsage(cpuBefore);
      const cpuUs = cpu.user + cpu.system;
      cleanerCpuUs += cpuUs;
      const readBytes = bytesReadByProcess() - readBefore;
      cleanerReadBytes += readBytes;
      const logBytes = running.node
        .status()
        .partitions.filter((s) => s.topic === TOPIC)
        .reduce((sum, s) => sum + s.sizeBytes, 0);
      const compacted = summaries.reduce((sum, s) => sum + s.segmentsCompacted, 0);
      console.log(
        `pass ${pass}: appended ${(appendedBytes / MiB).toFixed(0)} MiB, log ${(logBytes / MiB).toFixed(1)} MiB, ` +
          `pass CPU ${(cpuUs / 1000).toFixed(0)} ms, read ${(readBytes / MiB).toFixed(1)} MiB, wall ${(performance.now() - started).toFixed(0)} ms, ` +
          `${compacted} segments compacted`,
      );
    }
    console.log(
      `${opts.build ?? 'this build'}: cleaner CPU ${(cleanerCpuUs / 1000).toFixed(0)} ms for ` +
        `${(appendedBytes / MiB).toFixed(0)} MiB appended: ` +
        `${(cleanerCpuUs / 1000 / (appendedBytes / MiB)).toFixed(2)} ms a MiB; ` +
        `read ${(cleanerReadBytes / MiB).toFixed(0)} MiB`,
    );
  } finally {
    await running.stop();
    removeBenchDirs();
  }
}

await main();
