/**
 * The Kafka listener of issue 14 against a real `tailbase log-node` (fsync=always, 8 partitions,
 * `--kafka-port` on a free port), beside the log-node's batched append in process (the store's
 * own append with no transport, bench/log-append-in-process.ts: the bound any transport can reach)
 * and Redis XADD (bench/peer-redis.ts) of the same run:
 * - batched produce, acks=-1: 8 kcat (librdkafka) producers, one a partition, each reading the
 *   same prepared file of `key\tvalue` lines (100-byte JSON values, the shape of bench/log.ts),
 *   idempotent, linger.ms=5, batch.num.messages=1000; timed from start to the last exit, the count
 *   checked against the log's end offsets; ack latency is librdkafka's own round trip of each
 *   ProduceResponse (`-d protocol`);
 * - single-record produce, acks=-1: 64 idempotent kafkajs producers in this process, one record a
 *   send, each awaiting its ack before the next;
 * - consume: kcat -C -e from the beginning of every partition, one byte of output a record (so the
 *   count is checked), MB/s of key + value bytes read.
 * - batched produce from pre-encoded Produce requests over raw connections, one a partition: the
 *   broker's own figure (the clients above spend 4-6x the broker's CPU a record, so their figures
 *   are theirs), measured in turns with the in-process append of the same batches; run last,
 *   since re-sending the same keys leaves the cleaner work.
 * Every client's CPU is measured beside the log-node's, so a figure bounded by its client says so.
 */
import { spawn } from 'node:child_process';
import { createWriteStream, readdirSync, rmSync, statSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Kafka, logLevel } from 'kafkajs';
import type { Producer } from 'kafkajs';
import { createTopic, endOffsets } from './kafka-admin.js';
import {
  MachineBusy,
  type MeasuredWindow,
  measureWindow,
  type Window,
} from './kafka-load-window.js';
import {
  encodePartitionBatch,
  keysOf,
  type PreEncodedBatch,
  producePreEncoded,
  VALUE_BYTES,
  valueText,
} from './kafka-pre-encoded-produce.js';
import { LatencyHistogram } from './latency-histogram.js';
import { type InProcessAppendResult, measureInProcessAppends } from './log-append-in-process.js';
import { assert } from '../shared/assert.js';
import { runRedisBench } from './peer-redis.js';
import { detectPeers } from './peers.js';
import { freePort, spawnTailbase, tailbaseBuilt } from './processes.js';
import type { RunningProcess } from './processes.js';
import { makeBenchDir } from './references.js';
import type { BenchOptions, Ratio, References, WorkloadResult } from './types.js';

const GROUP = 'kafka';
const TOPIC = 'bench';
const PARTITIONS = 8;
const BATCH_RECORDS = 1000;
const BATCHED_PRODUCERS = PARTITIONS;
const SINGLE_PRODUCERS = 64;
const BATCHED_TARGET_RATIO = 0.8;
/** Turns of the in-process append and the pre-encoded Produce requests, alternated. */
const PAIR_TURNS = 2;
const CONSUME_TARGET_MB_PER_SEC = 200;
/**
 * A file line is `key\tvalue`; each producer names its partition and reads a file of keys whose
 * murmur2 partition it is (the listener refuses a key produced into another partition).
 */
const PRODUCE_FILE_RECORDS_MAX = 1_500_000;
const TOOL_TIMEOUT_MS = 120_000;
/** librdkafka gives up on a record after this, so a broken listener fails the run, not hangs it. */
const CLIENT_TIMEOUTS = ['-X', 'message.timeout.ms=60000', '-X', 'socket.timeout.ms=30000'];

interface Sizes {
  warmupRecordsPerProducer: number;
  /** The batched produce's target duration, which sizes its file after the warm-up's rate. */
  measureS: number;
  measuredRecordsMin: number;
  singleWarmupS: number;
  singleMeasureS: number;
}

function sizes(options: BenchOptions): Sizes {
  return options.quick
    ? {
        warmupRecordsPerProducer: 5_000,
        measureS: 1,
        measuredRecordsMin: 20_000,
        singleWarmupS: 0.5,
        singleMeasureS: 1,
      }
    : {
        warmupRecordsPerProducer: 50_000,
        measureS: 10,
        measuredRecordsMin: 100_000,
        singleWarmupS: 2,
        singleMeasureS: 10,
      };
}

/** One file a producer (partition); `bytes` is the key + value bytes of all of them. */
async function writeProduceFiles(
  dir: string,
  tag: string,
  count: number,
): Promise<{ paths: string[]; bytes: number }> {
  const paths = Array.from({ length: BATCHED_PRODUCERS }, (_, p) => join(dir, `${tag}-${p}.tsv`));
  const sizes = await Promise.all(
    paths.map((path, p) => writeProduceFile(path, count, `${tag}${p}`, p)),
  );
  return { paths, bytes: sizes.reduce((sum, size) => sum + size, 0) };
}

/** Writes `count` lines of `key\tvalue` of one partition; answers their key + value bytes. */
async function writeProduceFile(
  path: string,
  count: number,
  tag: string,
  partition: number,
): Promise<number> {
  const out = createWriteStream(path);
  let recordBytes = 0;
  const LINES_A_CHUNK = 10_000;
  const keys = keysOf(tag, partition, count, PARTITIONS);
  for (let start = 0; start < count; start += LINES_A_CHUNK) {
    let chunk = '';
    for (let i = start; i < Math.min(count, start + LINES_A_CHUNK); i++) {
      const key = keys.next().value as string;
      const value = valueText(i);
      recordBytes += key.length + value.length;
      chunk += `${key}\t${value}\n`;
    }
    if (!out.write(chunk)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
  }
  await new Promise<void>((resolve, reject) => {
    out.once('error', reject);
    out.end(() => resolve());
  });
  return recordBytes;
}

interface ToolRun {
  wallS: number;
  /** The tool's own user + system CPU seconds (the shell's `times`, children's line). */
  cpuSeconds: number;
  stdoutBytes: number;
}

/**
 * Runs a tool under `sh -c '...; times'` so its CPU is read after it exits; each stderr line goes
 * to `onLine`. Rejects on a non-zero exit or past TOOL_TIMEOUT_MS.
 */
function runTimed(
  command: string,
  args: string[],
  onLine: (line: string) => void = () => undefined,
): Promise<ToolRun> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(
      'sh',
      ['-c', '"$@"; rc=$?; echo "@times"; times; exit $rc', 'sh', command, ...args],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdoutBytes = 0;
    let stdoutTail = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdoutBytes += chunk.length;
      stdoutTail = (stdoutTail + chunk.toString('latin1')).slice(-400);
    });
    let partial = '';
    let errTail = '';
    child.stderr.on('data', (chunk: Buffer) => {
      const text = partial + chunk.toString('utf8');
      const lines = text.split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) onLine(line);
      errTail = (errTail + chunk.toString('utf8')).slice(-2000);
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), TOOL_TIMEOUT_MS);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      const wallS = (performance.now() - started) / 1000;
      // `times` prints the shell's line, then its children's: "0m1.20s 0m0.40s".
      const marker = stdoutTail.lastIndexOf('@times');
      const lines = stdoutTail.slice(marker).split('\n');
      const times = /(\d+)m([\d.]+)s\s+(\d+)m([\d.]+)s/.exec(lines[2] ?? '');
      if (code !== 0 || marker < 0) {
        reject(new Error(`${command} exited with ${code}: ${errTail.slice(-500)}`));
        return;
      }
      const cpuSeconds = times
        ? Number(times[1]) * 60 + Number(times[2]) + Number(times[3]) * 60 + Number(times[4])
        : 0;
      resolve({ wallS, cpuSeconds, stdoutBytes: stdoutBytes - (stdoutTail.length - marker) });
    });
  });
}

function directoryBytes(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    total += entry.isDirectory() ? directoryBytes(path) : statSync(path).size;
  }
  return total;
}

/** Machine load beside each figure: the 1-minute load average when the workload ended. */
function load1(): number {
  return Number(loadavg()[0].toFixed(2));
}

function kcatProduceArgs(broker: string, partition: number, file: string): string[] {
  return [
    '-P',
    '-b',
    broker,
    '-t',
    TOPIC,
    '-p',
    String(partition),
    '-K',
    '\t',
    '-X',
    'linger.ms=5',
    '-X',
    `batch.num.messages=${BATCH_RECORDS}`,
    '-X',
    'acks=all',
    '-X',
    'enable.idempotence=true',
    ...CLIENT_TIMEOUTS,
    // One debug line a ProduceResponse, with librdkafka's round trip: the ack latency.
    '-d',
    'protocol',
    '-l',
    file,
  ];
}

const RTT = /Received ProduceResponse \(.*rtt ([\d.]+)ms\)/;

interface ProduceRun {
  wallS: number;
  records: number;
  clientCpuSeconds: number;
  nodeCpuSeconds: number;
  machineBusyPercent: number;
  latency: LatencyHistogram;
  requests: number;
}

async function kcatProduce(
  node: RunningProcess,
  broker: string,
  files: readonly string[],
  recordsPerProducer: number,
): Promise<ProduceRun> {
  const latency = new LatencyHistogram();
  let requests = 0;
  const onLine = (line: string) => {
    const match = RTT.exec(line);
    if (match) {
      latency.recordMs(Number(match[1]));
      requests += 1;
    }
  };
  const before = await endOffsets(broker, TOPIC);
  const cpuBefore = node.cpuSeconds();
  const busy = new MachineBusy();
  const started = performance.now();
  const runs = await Promise.all(
    Array.from({ length: BATCHED_PRODUCERS }, (_, p) =>
      runTimed('kcat', kcatProduceArgs(broker, p, files[p]), onLine),
    ),
  );
  const wallS = (performance.now() - started) / 1000;
  const machineBusyPercent = busy.percent();
  const nodeCpuSeconds = node.cpuSeconds() - cpuBefore;
  const records = (await endOffsets(broker, TOPIC)) - before;
  const expected = recordsPerProducer * BATCHED_PRODUCERS;
  if (records !== expected) {
    throw new Error(`kcat produced ${expected} records, the log gained ${records}`);
  }
  return {
    wallS,
    records,
    clientCpuSeconds: runs.reduce((sum, r) => sum + r.cpuSeconds, 0),
    nodeCpuSeconds,
    machineBusyPercent,
    latency,
    requests,
  };
}

interface SingleRun extends MeasuredWindow {
  records: number;
  errors: number;
  latency: LatencyHistogram;
}

interface BatchedRun extends SingleRun {
  /** Key + value bytes of every record sent, warm-up included (what the consume reads). */
  recordBytesAll: number;
}

/** 8 idempotent kafkajs producers, one a partition, each sending BATCH_RECORDS and awaiting. */
async function kafkajsBatched(
  node: RunningProcess,
  broker: string,
  warmupS: number,
  measureS: number,
): Promise<BatchedRun> {
  const kafka = new Kafka({
    clientId: 'tailbase-bench-batched',
    brokers: [broker],
    logLevel: logLevel.NOTHING,
    connectionTimeout: 10_000,
    requestTimeout: 30_000,
  });
  const producers: Producer[] = Array.from({ length: BATCHED_PRODUCERS }, () =>
    kafka.producer({ idempotent: true, maxInFlightRequests: 1 }),
  );
  await Promise.all(producers.map((p) => p.connect()));
  try {
    let batchBytes = 0;
    const batches = producers.map((_, p) =>
      Array.from(keysOf(`j${p}`, p, BATCH_RECORDS, PARTITIONS), (key, i) => {
        const value = valueText(i);
        if (p === 0) batchBytes += key.length + value.length;
        return { key: Buffer.from(key), value: Buffer.from(value), partition: p };
      }),
    );
    const window: Window = { recording: false, stop: false };
    let records = 0;
    let sentAll = 0;
    let errors = 0;
    const latency = new LatencyHistogram();
    const loop = async (producer: Producer, p: number) => {
      while (!window.stop) {
        const sent = performance.now();
        try {
          await producer.send({ topic: TOPIC, acks: -1, messages: batches[p] });
          sentAll += 1;
          if (window.recording) {
            latency.recordMs(performance.now() - sent);
            records += BATCH_RECORDS;
          }
        } catch {
          if (window.recording) errors += 1;
        }
      }
    };
    const loops = producers.map(loop);
    const measured = await measureWindow(node, warmupS, measureS, window);
    await Promise.all(loops);
    return {
      records,
      errors,
      latency,
      ...measured,
      // Keys differ in length by producer by at most a digit: producer 0's bytes stand for all.
      recordBytesAll: sentAll * batchBytes,
    };
  } finally {
    await Promise.all(producers.map((p) => p.disconnect().catch(() => undefined)));
  }
}

/**
 * The in-process append and the pre-encoded Produce requests of the same batches, in turns
 * (PAIR_TURNS of each, measureS split between them), each figure summed over its turns: on a
 * shared machine whose load drifts, the two sides of the ratio see the same drift.
 */
async function measureBatchedPair(
  node: RunningProcess,
  kafkaPort: number,
  batches: readonly PreEncodedBatch[],
  s: Sizes,
): Promise<{ inProcess: InProcessAppendResult; raw: SingleRun }> {
  const turnS = s.singleMeasureS / PAIR_TURNS;
  let inProcess: InProcessAppendResult | null = null;
  let raw: SingleRun | null = null;
  for (let turn = 0; turn < PAIR_TURNS; turn++) {
    const a = await measureInProcessAppends({
      topic: TOPIC,
      batches: batches.map((b) => b.batch),
      recordsPerBatch: BATCH_RECORDS,
      warmupS: s.singleWarmupS,
      measureS: turnS,
    });
    const b = await producePreEncoded(node, kafkaPort, TOPIC, batches, s.singleWarmupS, turnS);
    if (inProcess === null || raw === null) {
      inProcess = a;
      raw = b;
      continue;
    }
    inProcess.latency.merge(a.latency);
    raw.latency.merge(b.latency);
    const busy = (x: SingleRun) => x.machineBusyPercent * x.durationS;
    raw.machineBusyPercent = (busy(raw) + busy(b)) / (raw.durationS + b.durationS);
    for (const key of ['records', 'durationS', 'errors', 'cpuSeconds'] as const) {
      inProcess[key] += a[key];
    }
    for (const key of [
      'records',
      'durationS',
      'errors',
      'clientCpuSeconds',
      'nodeCpuSeconds',
    ] as const) {
      raw[key] += b[key];
    }
  }
  assert(inProcess !== null && raw !== null, 'PAIR_TURNS is at least 1');
  return { inProcess, raw };
}

/** 64 idempotent kafkajs producers, each sending one record and awaiting its ack, in a loop. */
async function kafkajsSingle(
  node: RunningProcess,
  broker: string,
  warmupS: number,
  measureS: number,
): Promise<SingleRun> {
  const kafka = new Kafka({
    clientId: 'tailbase-bench',
    brokers: [broker],
    logLevel: logLevel.NOTHING,
    connectionTimeout: 10_000,
    requestTimeout: 30_000,
  });
  const producers: Producer[] = Array.from({ length: SINGLE_PRODUCERS }, () =>
    kafka.producer({ idempotent: true, maxInFlightRequests: 1 }),
  );
  await Promise.all(producers.map((p) => p.connect()));
  try {
    const value = Buffer.from(valueText(1));
    const window: Window = { recording: false, stop: false };
    let records = 0;
    let errors = 0;
    const latency = new LatencyHistogram();
    const loop = async (producer: Producer, i: number) => {
      const partition = i % PARTITIONS;
      const [key] = keysOf(`s${i}`, partition, 1, PARTITIONS);
      const messages = [{ key, value }];
      while (!window.stop) {
        const sent = performance.now();
        try {
          await producer.send({
            topic: TOPIC,
            acks: -1,
            messages: messages.map((m) => ({ ...m, partition })),
          });
          if (window.recording) {
            latency.recordMs(performance.now() - sent);
            records += 1;
          }
        } catch {
          if (window.recording) errors += 1;
        }
      }
    };
    const loops = producers.map(loop);
    const measured = await measureWindow(node, warmupS, measureS, window);
    const result: SingleRun = { records, errors, latency, ...measured };
    await Promise.all(loops);
    return result;
  } finally {
    await Promise.all(producers.map((p) => p.disconnect().catch(() => undefined)));
  }
}

interface ConsumeRun {
  wallS: number;
  records: number;
  clientCpuSeconds: number;
  nodeCpuSeconds: number;
  machineBusyPercent: number;
}

async function kcatConsume(node: RunningProcess, broker: string): Promise<ConsumeRun> {
  const cpuBefore = node.cpuSeconds();
  const busy = new MachineBusy();
  // One newline a record: kcat still decodes every record; the bytes counted are the count.
  const run = await runTimed('kcat', [
    '-C',
    '-b',
    broker,
    '-t',
    TOPIC,
    '-o',
    'beginning',
    '-e',
    '-q',
    '-f',
    '\\n',
    ...CLIENT_TIMEOUTS,
  ]);
  return {
    wallS: run.wallS,
    records: run.stdoutBytes,
    clientCpuSeconds: run.cpuSeconds,
    nodeCpuSeconds: node.cpuSeconds() - cpuBefore,
    machineBusyPercent: busy.percent(),
  };
}

function base(name: string, description: string): WorkloadResult {
  return { group: GROUP, name, description, figures: {}, ratios: [], peakRssBytes: {} };
}

function ratio(reference: string, numerator: number, denominator: number | undefined): Ratio[] {
  return denominator ? [{ reference, value: numerator / denominator }] : [];
}

const NAMES = {
  inProcess: 'log append batched (in process)',
  batched: 'produce batched (kcat)',
  batchedKafkajs: 'produce batched (kafkajs)',
  batchedRaw: 'produce batched (pre-encoded requests)',
  single: 'produce single-record (kafkajs)',
  consume: 'consume (kcat -C)',
  xadd: 'redis XADD',
};

export async function runKafkaBench(
  options: BenchOptions,
  references: References,
): Promise<WorkloadResult[]> {
  const descriptions = {
    inProcess: `the log-node's own append in the bench process, no transport: ${BATCHED_PRODUCERS} producers, one a partition, each appending the pre-encoded produce's ${BATCH_RECORDS} x ${VALUE_BYTES} B batch and awaiting it, fsync=always`,
    batched: `${BATCHED_PRODUCERS} kcat -P (librdkafka), one a partition, acks=all, idempotent, linger.ms=5, batch.num.messages=${BATCH_RECORDS}, ${VALUE_BYTES} B JSON values, fsync=always`,
    batchedKafkajs: `${BATCHED_PRODUCERS} idempotent kafkajs producers, one a partition, ${BATCH_RECORDS} x ${VALUE_BYTES} B records a send, acks=-1, fsync=always`,
    batchedRaw: `${BATCHED_PRODUCERS} connections, one a partition, each re-sending one Produce v9 request of ${BATCH_RECORDS} x ${VALUE_BYTES} B records encoded once (no producer id) and awaiting its answer, acks=-1, fsync=always: the broker's figure, as wrk's for HTTP`,
    single: `${SINGLE_PRODUCERS} idempotent kafkajs producers, 1 x ${VALUE_BYTES} B record a send, acks=-1, fsync=always`,
    consume: `kcat -C -e -o beginning, all ${PARTITIONS} partitions, MB/s of key + value bytes`,
    xadd: `bench/peer-redis.ts: 1 x ${VALUE_BYTES} B entry, 64 clients, appendfsync always`,
  };
  const all = Object.keys(NAMES) as (keyof typeof NAMES)[];
  const missing = !tailbaseBuilt()
    ? 'skipped: not built yet (dist/bin/tailbase.js)'
    : !commandExists('kcat')
      ? 'skipped: kcat not installed (apt-get install -y kcat)'
      : null;
  if (missing !== null) {
    return all.map((k) => ({ ...base(NAMES[k], descriptions[k]), skipped: missing }));
  }
  const s = sizes(options);
  const results: WorkloadResult[] = [];

  /** The batched rows, held against the in-process append once it is measured. */
  const batchedRows: { row: WorkloadResult; recordsPerSec: number }[] = [];

  // One Kafka log-node for produce, consume and single-record produce.
  const dataDir = makeBenchDir('kafka');
  const kafkaPort = await freePort();
  const broker = `127.0.0.1:${kafkaPort}`;
  const node = await spawnTailbase(
    'log-node',
    ['--data', dataDir, '--partitions', String(PARTITIONS), '--kafka-port', String(kafkaPort)],
    { env: { TAILBASE_FSYNC: 'always' } },
  );
  try {
    await createTopic(broker, TOPIC, PARTITIONS);
    const warmupFiles = await writeProduceFiles(dataDir, 'w', s.warmupRecordsPerProducer);
    const warmupBytes = warmupFiles.bytes;
    const warmup = await kcatProduce(node, broker, warmupFiles.paths, s.warmupRecordsPerProducer);
    for (const path of warmupFiles.paths) rmSync(path);
    // Size the measured run to last about measureS at the warm-up's rate.
    const perProducer = Math.min(
      PRODUCE_FILE_RECORDS_MAX,
      Math.max(
        s.measuredRecordsMin,
        Math.ceil(((warmup.records / warmup.wallS) * s.measureS) / BATCHED_PRODUCERS),
      ),
    );
    const files = await writeProduceFiles(dataDir, 'm', perProducer);
    const fileBytes = files.bytes;
    node.resetPeakRss();
    const b = await kcatProduce(node, broker, files.paths, perProducer);
    for (const path of files.paths) rmSync(path);
    const bRecordsPerSec = b.records / b.wallS;
    const clientCores = b.clientCpuSeconds / b.wallS;
    const nodeCores = b.nodeCpuSeconds / b.wallS;
    const batchedKcat: WorkloadResult = {
      ...base(NAMES.batched, descriptions.batched),
      throughput: { value: bRecordsPerSec, unit: 'records/s' },
      latency: b.latency.summary(),
      figures: {
        valueMbPerSec: (bRecordsPerSec * VALUE_BYTES) / 1e6,
        recordMbPerSec: fileBytes / b.wallS / 1e6,
        records: b.records,
        produceRequests: b.requests,
        recordsPerRequest: b.requests > 0 ? b.records / b.requests : 0,
        durationS: b.wallS,
        producers: BATCHED_PRODUCERS,
        partitions: PARTITIONS,
        errorCount: 0,
        warmupRecordsPerSec: warmup.records / warmup.wallS,
        logNodeCpuCores: nodeCores,
        clientCpuCores: clientCores,
        clientCpuMicrosPerRecord: (b.clientCpuSeconds * 1e6) / b.records,
        logNodeCpuMicrosPerRecord: (b.nodeCpuSeconds * 1e6) / b.records,
        machineBusyPercent: b.machineBusyPercent,
        load1: load1(),
        client: 'kcat 1.7 (librdkafka), ack latency = ProduceResponse rtt a request',
        bottleneck: bottleneck(clientCores, nodeCores, b.machineBusyPercent),
      },
      peakRssBytes: { 'log-node': node.peakRssBytes() },
      cpu: {
        machineBusyPercent: b.machineBusyPercent,
        microsPerRequest: {
          'log-node µs/record': (b.nodeCpuSeconds * 1e6) / b.records,
          'kcat µs/record': (b.clientCpuSeconds * 1e6) / b.records,
        },
      },
    };
    results.push(batchedKcat);
    batchedRows.push({ row: batchedKcat, recordsPerSec: bRecordsPerSec });

    // The same batches from kafkajs in this process: the other client, for the client's share.
    node.resetPeakRss();
    const kj = await kafkajsBatched(node, broker, s.singleWarmupS, s.singleMeasureS);
    const kjRecordsPerSec = kj.records / kj.durationS;
    const kjClientCores = kj.clientCpuSeconds / kj.durationS;
    const kjNodeCores = kj.nodeCpuSeconds / kj.durationS;
    const batchedKafkajs: WorkloadResult = {
      ...base(NAMES.batchedKafkajs, descriptions.batchedKafkajs),
      throughput: { value: kjRecordsPerSec, unit: 'records/s' },
      latency: kj.latency.summary(),
      figures: {
        valueMbPerSec: (kjRecordsPerSec * VALUE_BYTES) / 1e6,
        records: kj.records,
        durationS: kj.durationS,
        producers: BATCHED_PRODUCERS,
        errorCount: kj.errors,
        logNodeCpuCores: kjNodeCores,
        clientCpuCores: kjClientCores,
        clientCpuMicrosPerRecord: kj.records > 0 ? (kj.clientCpuSeconds * 1e6) / kj.records : 0,
        logNodeCpuMicrosPerRecord: kj.records > 0 ? (kj.nodeCpuSeconds * 1e6) / kj.records : 0,
        machineBusyPercent: kj.machineBusyPercent,
        load1: load1(),
        client: 'kafkajs 2.2 in the bench process (one thread), messages built once',
        bottleneck: bottleneck(kjClientCores, kjNodeCores, kj.machineBusyPercent, 1),
      },
      peakRssBytes: { 'log-node': node.peakRssBytes() },
      cpu: {
        machineBusyPercent: kj.machineBusyPercent,
        microsPerRequest: {
          'log-node µs/record': kj.records > 0 ? (kj.nodeCpuSeconds * 1e6) / kj.records : 0,
          'kafkajs µs/record': kj.records > 0 ? (kj.clientCpuSeconds * 1e6) / kj.records : 0,
        },
      },
    };
    results.push(batchedKafkajs);
    batchedRows.push({ row: batchedKafkajs, recordsPerSec: kjRecordsPerSec });

    // Consume everything the produces left: kcat's warm-up and run, kafkajs's batches.
    node.resetPeakRss();
    const inLog = await endOffsets(broker, TOPIC);
    const c = await kcatConsume(node, broker);
    if (c.records !== inLog) {
      throw new Error(`kcat -C read ${c.records} records, the log holds ${inLog}`);
    }
    const consumedBytes = warmupBytes + fileBytes + kj.recordBytesAll;
    const cMb = consumedBytes / c.wallS / 1e6;
    const logBytes = directoryBytes(dataDir);
    const cClientCores = c.clientCpuSeconds / c.wallS;
    const cNodeCores = c.nodeCpuSeconds / c.wallS;
    results.push({
      ...base(NAMES.consume, descriptions.consume),
      throughput: { value: cMb, unit: 'MB/s' },
      figures: {
        recordsPerSec: c.records / c.wallS,
        records: c.records,
        recordBytes: consumedBytes,
        logBytesOnDisk: logBytes,
        logMbPerSec: logBytes / c.wallS / 1e6,
        durationS: c.wallS,
        logNodeCpuCores: cNodeCores,
        clientCpuCores: cClientCores,
        machineBusyPercent: c.machineBusyPercent,
        load1: load1(),
        client: 'kcat 1.7 (librdkafka) -C -e',
        bottleneck: bottleneck(cClientCores, cNodeCores, c.machineBusyPercent),
      },
      ratios: ratio('disk seq write MB/s', cMb, references.seqWriteMbPerSec?.value),
      peakRssBytes: { 'log-node': node.peakRssBytes() },
      targets: [
        {
          name: 'kcat consume',
          goal: `>= ${CONSUME_TARGET_MB_PER_SEC} MB/s`,
          met: cMb >= CONSUME_TARGET_MB_PER_SEC,
        },
      ],
    });

    node.resetPeakRss();
    const single = await kafkajsSingle(node, broker, s.singleWarmupS, s.singleMeasureS);
    const sRecordsPerSec = single.records / single.durationS;
    const sClientCores = single.clientCpuSeconds / single.durationS;
    const sNodeCores = single.nodeCpuSeconds / single.durationS;
    results.push({
      ...base(NAMES.single, descriptions.single),
      throughput: { value: sRecordsPerSec, unit: 'records/s' },
      latency: single.latency.summary(),
      figures: {
        records: single.records,
        durationS: single.durationS,
        producers: SINGLE_PRODUCERS,
        errorCount: single.errors,
        logNodeCpuCores: sNodeCores,
        clientCpuCores: sClientCores,
        clientCpuMicrosPerRecord:
          single.records > 0 ? (single.clientCpuSeconds * 1e6) / single.records : 0,
        logNodeCpuMicrosPerRecord:
          single.records > 0 ? (single.nodeCpuSeconds * 1e6) / single.records : 0,
        machineBusyPercent: single.machineBusyPercent,
        load1: load1(),
        client: 'kafkajs 2.2 in the bench process (one thread)',
        bottleneck: bottleneck(sClientCores, sNodeCores, single.machineBusyPercent, 1),
      },
      ratios: [...ratio('disk fsync/s', sRecordsPerSec, references.fsyncPerSec?.value)],
      peakRssBytes: { 'log-node': node.peakRssBytes() },
      cpu: {
        machineBusyPercent: single.machineBusyPercent,
        microsPerRequest: {
          'log-node µs/record':
            single.records > 0 ? (single.nodeCpuSeconds * 1e6) / single.records : 0,
          'kafkajs µs/record':
            single.records > 0 ? (single.clientCpuSeconds * 1e6) / single.records : 0,
        },
      },
    });
    // The same batches appended in this process with no transport, then sent as Produce
    // requests: the pair the batched target compares, measured in turns. Last on this node:
    // it writes the same keys again and again, which leaves the cleaner work that would weigh
    // on any workload after it.
    const batches = Array.from({ length: BATCHED_PRODUCERS }, (_, p) => ({
      partition: p,
      batch: encodePartitionBatch(`r${p}`, p, BATCH_RECORDS, PARTITIONS),
      recordCount: BATCH_RECORDS,
    }));
    node.resetPeakRss();
    const { inProcess, raw } = await measureBatchedPair(node, kafkaPort, batches, s);
    const inProcessRecordsPerSec = inProcess.records / inProcess.durationS;
    results.push({
      ...base(NAMES.inProcess, descriptions.inProcess),
      throughput: { value: inProcessRecordsPerSec, unit: 'records/s' },
      latency: inProcess.latency.summary(),
      figures: {
        valueMbPerSec: (inProcessRecordsPerSec * VALUE_BYTES) / 1e6,
        batchBytes: batches[0].batch.length,
        records: inProcess.records,
        durationS: inProcess.durationS,
        producers: BATCHED_PRODUCERS,
        errorCount: inProcess.errors,
        processCpuCores: inProcess.cpuSeconds / inProcess.durationS,
        cpuMicrosPerRecord:
          inProcess.records > 0 ? (inProcess.cpuSeconds * 1e6) / inProcess.records : 0,
        load1: load1(),
      },
      peakRssBytes: {},
    });
    const rawRecordsPerSec = raw.records / raw.durationS;
    const batchedRaw: WorkloadResult = {
      ...base(NAMES.batchedRaw, descriptions.batchedRaw),
      throughput: { value: rawRecordsPerSec, unit: 'records/s' },
      latency: raw.latency.summary(),
      figures: {
        valueMbPerSec: (rawRecordsPerSec * VALUE_BYTES) / 1e6,
        records: raw.records,
        durationS: raw.durationS,
        connections: BATCHED_PRODUCERS,
        errorCount: raw.errors,
        logNodeCpuCores: raw.nodeCpuSeconds / raw.durationS,
        clientCpuCores: raw.clientCpuSeconds / raw.durationS,
        logNodeCpuMicrosPerRecord: raw.records > 0 ? (raw.nodeCpuSeconds * 1e6) / raw.records : 0,
        machineBusyPercent: raw.machineBusyPercent,
        load1: load1(),
      },
      peakRssBytes: { 'log-node': node.peakRssBytes() },
      cpu: {
        machineBusyPercent: raw.machineBusyPercent,
        microsPerRequest: {
          'log-node µs/record': raw.records > 0 ? (raw.nodeCpuSeconds * 1e6) / raw.records : 0,
          'client µs/record': raw.records > 0 ? (raw.clientCpuSeconds * 1e6) / raw.records : 0,
        },
      },
    };
    results.push(batchedRaw);
    batchedRows.push({ row: batchedRaw, recordsPerSec: rawRecordsPerSec });
    for (const { row, recordsPerSec } of batchedRows) {
      const value = recordsPerSec / inProcessRecordsPerSec;
      row.ratios.push({ reference: NAMES.inProcess, value });
      row.targets = [
        {
          name: 'batched produce vs the in-process batched append',
          goal: `>= ${BATCHED_TARGET_RATIO}x`,
          met: value >= BATCHED_TARGET_RATIO,
        },
      ];
    }
  } finally {
    await node.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }

  // 5. Redis XADD of the same size of record, single entries at 64 clients.
  const redis = detectPeers().find((p) => p.name === 'redis');
  if (!redis?.binary) {
    results.push({
      ...base(NAMES.xadd, descriptions.xadd),
      skipped: 'skipped: redis-server not installed (apt-get install -y redis-server)',
    });
  } else {
    const xadd = (await runRedisBench(options, redis.binary)).find((w) => w.name === 'redis XADD');
    if (xadd) {
      results.push({
        ...xadd,
        group: GROUP,
        description: descriptions.xadd,
        figures: { ...xadd.figures, load1: load1() },
      });
      const single = results.find((w) => w.name === NAMES.single);
      if (single?.throughput && xadd.throughput && xadd.throughput.value > 0) {
        single.ratios.push({
          reference: NAMES.xadd,
          value: single.throughput.value / xadd.throughput.value,
        });
      }
    }
  }
  return results;
}

/**
 * Which side bounds a figure: a client using most of a core it cannot exceed (a one-thread client),
 * or using more CPU than the log-node, or a machine with no idle left.
 */
function bottleneck(
  clientCores: number,
  nodeCores: number,
  machineBusyPercent: number,
  clientCoresMax = Infinity,
): string {
  if (clientCores >= 0.85 * clientCoresMax) return 'client (a saturated client thread)';
  if (machineBusyPercent >= 90 && clientCores >= nodeCores)
    return 'client (it out-spends the log-node on a full machine)';
  if (machineBusyPercent >= 90) return 'machine CPU (log-node busiest)';
  return 'neither saturated';
}

function commandExists(command: string): boolean {
  return (process.env.PATH ?? '')
    .split(':')
    .some((dir) => dir.length > 0 && fileExists(join(dir, command)));
}

function fileExists(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}
