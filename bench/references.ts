/**
 * The machine's own limits, measured in the same run as tailbase so every figure can be read as a
 * fraction of what the hardware (or a bare HTTP handler) allows: the disk's fsync/s, its
 * sequential write rate, and a bare hono handler's requests/s under the same load client.
 */
import {
  closeSync,
  fdatasyncSync,
  fsyncSync,
  mkdtempSync,
  openSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CpuWindow } from './cpu-share.js';
import { LatencyHistogram } from './latency-histogram.js';
import { loadClient, runLoad } from './load.js';
import { freePort, spawnServer } from './processes.js';
import type { BenchOptions, Reference, References } from './types.js';

const FSYNC_BLOCK_BYTES = 4096;
const FSYNC_COUNT_MAX = 200_000;
const SEQ_CHUNK_BYTES = 1 << 20;
/** The body the bare handler's reference load posts, bytes. */
export const HONO_BODY_BYTES = 160;
const HONO_CONNECTIONS = 64;

/** Where benchmarks put their data: the filesystem whose limits the references measure. */
export function benchDataRoot(): string {
  return process.env.TAILBASE_BENCH_DIR ?? tmpdir();
}

/** Every directory made for a run: removed when the bench exits, whatever the path. */
const benchDirs = new Set<string>();

export function makeBenchDir(prefix: string): string {
  const dir = mkdtempSync(join(benchDataRoot(), `tailbase-bench-${prefix}-`));
  benchDirs.add(dir);
  return dir;
}

/** Removes what makeBenchDir made (a group that timed out leaves its directories otherwise). */
export function removeBenchDirs(): void {
  for (const dir of benchDirs) rmSync(dir, { recursive: true, force: true });
  benchDirs.clear();
}

/** Appends 4 KiB blocks, each followed by fdatasync, the way a log commits: bounded by time and count. */
export function measureFsync(options: BenchOptions): Reference {
  const dir = makeBenchDir('fsync');
  const durationMs = options.quick ? 500 : 3000;
  const block = Buffer.alloc(FSYNC_BLOCK_BYTES, 0x61);
  const histogram = new LatencyHistogram();
  const fd = openSync(join(dir, 'fsync.bin'), 'w');
  let count = 0;
  const started = performance.now();
  try {
    while (count < FSYNC_COUNT_MAX && performance.now() - started < durationMs) {
      const t0 = performance.now();
      writeSync(fd, block);
      fdatasyncSync(fd);
      histogram.recordMs(performance.now() - t0);
      count += 1;
    }
  } finally {
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  }
  const seconds = (performance.now() - started) / 1000;
  const latency = histogram.summary();
  return {
    name: 'disk fsync/s',
    value: count / seconds,
    unit: 'fsync/s',
    detail: { blockBytes: FSYNC_BLOCK_BYTES, count, p50Ms: latency.p50Ms, p99Ms: latency.p99Ms },
  };
}

/** Writes 1 MiB chunks then one fsync; the rate counts the fsync, as a durable write must. */
export function measureSequentialWrite(options: BenchOptions): Reference {
  const dir = makeBenchDir('seq');
  const totalBytes = (options.quick ? 32 : 256) * SEQ_CHUNK_BYTES;
  const chunk = Buffer.alloc(SEQ_CHUNK_BYTES, 0x62);
  const fd = openSync(join(dir, 'seq.bin'), 'w');
  const started = performance.now();
  try {
    for (let written = 0; written < totalBytes; written += SEQ_CHUNK_BYTES) writeSync(fd, chunk);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  }
  const seconds = (performance.now() - started) / 1000;
  return {
    name: 'disk seq write MB/s',
    value: totalBytes / 1e6 / seconds,
    unit: 'MB/s',
    detail: { totalBytes, chunkBytes: SEQ_CHUNK_BYTES, seconds },
  };
}

/** A bare hono handler in its own process under the same client and concurrency as the appends. */
export async function measureHono(options: BenchOptions): Promise<Reference> {
  const port = await freePort();
  const script = fileURLToPath(new URL('./bare-hono-server.js', import.meta.url));
  const server = await spawnServer({ args: [script, String(port)], port, readyPath: '/healthz' });
  try {
    const run = {
      baseUrl: server.url,
      method: 'POST' as const,
      targets: [{ path: '/echo', body: Buffer.alloc(HONO_BODY_BYTES, 0x63) }],
      connections: HONO_CONNECTIONS,
      threads: 2,
    };
    await runLoad({ ...run, durationS: 1 });
    const window = new CpuWindow({ hono: [server] });
    const result = await runLoad({ ...run, durationS: options.quick ? 1 : 5 });
    // What a request costs the bare handler's process: the floor for the edge's CPU a request.
    const cpuMicrosPerRequest = window.microsPerRequest(result.requests).hono;
    return {
      name: 'bare hono req/s',
      value: result.requestsPerSec,
      unit: 'req/s',
      detail: {
        client: loadClient(),
        connections: HONO_CONNECTIONS,
        p50Ms: result.latency.p50Ms,
        p99Ms: result.latency.p99Ms,
        errors: result.errors,
        cpuMicrosPerRequest,
        peakRssBytes: server.peakRssBytes(),
      },
    };
  } finally {
    await server.stop();
  }
}

export async function measureReferences(options: BenchOptions): Promise<References> {
  return {
    fsyncPerSec: measureFsync(options),
    seqWriteMbPerSec: measureSequentialWrite(options),
    honoReqPerSec: await measureHono(options),
  };
}
