/**
 * etcd as a peer: put (acknowledged after its raft log entry is fsynced) and get by key,
 * serializable and linearizable, the same work as the gateway's PUT and GET (same 2000 keys,
 * same document, 64 connections). Debian packages no etcd benchmark tool, so the load is HTTP
 * on etcd's v3 JSON gateway (/v3/kv/put, /v3/kv/range) from the suite's own load client (wrk
 * when installed), which adds JSON and base64 work etcd's gRPC clients would not pay.
 */
import { rmSync } from 'node:fs';
import { loadClient, runLoad } from './load.js';
import { freePort, spawnServer } from './processes.js';
import { makeBenchDir } from './references.js';
import type { BenchOptions, WorkloadResult } from './types.js';
import type { WrkResult } from './wrk.js';
import { CONNECTIONS, DOCUMENT, KEYS, keyOf } from './workload.js';

/** etcd's default --max-txn-ops. */
const TXN_OPS_MAX = 128;
const PRELOAD_REQUEST_MS_MAX = 10_000;

const base64 = (text: string) => Buffer.from(text).toString('base64');
const keys = Array.from({ length: KEYS }, (_, i) => base64(keyOf(i)));

/** Every key exists before the load, so gets measure hits whatever the put rate reached. */
async function preload(url: string): Promise<void> {
  for (let i = 0; i < KEYS; i += TXN_OPS_MAX) {
    const success = keys
      .slice(i, i + TXN_OPS_MAX)
      .map((key) => ({ request_put: { key, value: base64(DOCUMENT) } }));
    const response = await fetch(`${url}/v3/kv/txn`, {
      method: 'POST',
      body: JSON.stringify({ success }),
      signal: AbortSignal.timeout(PRELOAD_REQUEST_MS_MAX),
    });
    const body = await response.text();
    if (!response.ok) throw new Error(`etcd preload failed (${response.status}): ${body}`);
  }
}

export async function runEtcdBench(
  options: BenchOptions,
  binary: string,
): Promise<WorkloadResult[]> {
  const dir = makeBenchDir('etcd');
  const port = await freePort();
  const peerPort = await freePort();
  const clientUrl = `http://127.0.0.1:${port}`;
  const peerUrl = `http://127.0.0.1:${peerPort}`;
  try {
    const server = await spawnServer({
      command: binary,
      args: [
        '--name',
        'bench',
        '--data-dir',
        dir,
        '--listen-client-urls',
        clientUrl,
        '--advertise-client-urls',
        clientUrl,
        '--listen-peer-urls',
        peerUrl,
        '--initial-advertise-peer-urls',
        peerUrl,
        '--initial-cluster',
        `bench=${peerUrl}`,
        '--log-level',
        'warn',
      ],
      port,
      readyPath: '/health',
    });
    try {
      await preload(clientUrl);
      const durationS = options.quick ? 1 : 5;
      const load = async (path: string, bodies: string[]) => {
        server.resetPeakRss();
        return runLoad({
          baseUrl: clientUrl,
          method: 'POST',
          contentType: 'application/json',
          targets: bodies.map((body) => ({ path, body: Buffer.from(body) })),
          connections: CONNECTIONS,
          threads: 2,
          durationS,
        });
      };
      const row = (name: string, description: string, unit: string, result: WrkResult) => ({
        group: 'peers',
        name,
        description: `${description}, ${CONNECTIONS} connections, v3 JSON gateway, client ${loadClient()}`,
        throughput: { value: result.requestsPerSec, unit },
        latency: result.latency,
        figures: { connections: CONNECTIONS, errorCount: result.errors, client: loadClient() },
        ratios: [],
        peakRssBytes: { etcd: server.peakRssBytes() },
      });
      const put = await load(
        '/v3/kv/put',
        keys.map((key) => JSON.stringify({ key, value: base64(DOCUMENT) })),
      );
      const putRow = row('etcd put', `put by key, ${KEYS} keys, fsync per commit`, 'writes/s', put);
      const serializable = await load(
        '/v3/kv/range',
        keys.map((key) => JSON.stringify({ key, serializable: true })),
      );
      const serializableRow = row(
        'etcd get serializable',
        `range of one key, serializable (local read)`,
        'req/s',
        serializable,
      );
      const linearizable = await load(
        '/v3/kv/range',
        keys.map((key) => JSON.stringify({ key })),
      );
      const linearizableRow = row(
        'etcd get linearizable',
        `range of one key, linearizable (read index through raft)`,
        'req/s',
        linearizable,
      );
      return [putRow, serializableRow, linearizableRow];
    } finally {
      await server.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
