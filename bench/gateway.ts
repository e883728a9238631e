/**
 * `npm run bench -- gateway` (issue 4): a log-node, serve-nodes and a gateway as real processes
 * (`tailbase ...`), the serve-nodes and the gateway reaching the log-node by its Kafka listener
 * (`--log kafka://`), driven by wrk at 64 connections, each rate beside the bare hono handler
 * measured in the same run:
 * - put: single-document PUT (durable: the log fsyncs before the ack), writes/s;
 * - write→visible: from a PUT's ack to a GET carrying its token returning the document, p50/p99;
 * - get, scan, search: requests/s through the gateway (two serve-nodes, four partitions each);
 * - search skew: overlap@10 of the merged ranking over two serve-nodes against one serve-node
 *   holding every partition (per-node term statistics make scores not quite comparable).
 */
import { rmSync } from 'node:fs';
import { HttpServeClient } from '../shared/http-serve-client.js';
import { apiWorkloads, measureApi, request, type ApiTargets } from './api-workloads.js';
import { CpuWindow } from './cpu-share.js';
import { skewQueries } from './workload.js';
import {
  freePort,
  spawnLogNode,
  spawnTailbase,
  tailbaseBuilt,
  type RunningProcess,
} from './processes.js';
import { makeBenchDir } from './references.js';
import type { BenchOptions, References, WorkloadResult } from './types.js';

const PARTITIONS = 8;
const SKEW_QUERIES = 50;
/** Issue 13's goals, the same for the cluster as for the embedded process. */
export const TARGETS: ApiTargets = {
  putVsHono: 0.5,
  getVsHono: 0.6,
  scanVsHono: 0.3,
  visibleP99Ms: 5,
};

export async function runGatewayBench(
  options: BenchOptions & { references?: References },
): Promise<{ workloads: WorkloadResult[] }> {
  const group = 'gateway';
  if (!tailbaseBuilt()) {
    return { workloads: [skipRow(group, 'skipped: not built yet (dist/bin/tailbase.js)')] };
  }
  const hono = options.references?.honoReqPerSec?.value ?? 0;
  const dirs = [makeBenchDir('gw-log')];
  const kafkaPort = await freePort();
  const log = await spawnLogNode(dirs[0], PARTITIONS, ['--kafka-port', String(kafkaPort)]);
  const logUrl = `kafka://127.0.0.1:${kafkaPort}`;
  const processes: RunningProcess[] = [];
  try {
    const serve = async (partitions: string) => {
      dirs.push(makeBenchDir('gw-serve'));
      const flags = ['--data', dirs[dirs.length - 1], '--log', logUrl, '--partitions', partitions];
      const node = await spawnTailbase('serve-node', flags, { readyPath: '/healthz' });
      processes.push(node);
      return node;
    };
    const half = PARTITIONS / 2;
    const low = await serve(`0-${half - 1}`);
    const high = await serve(`${half}-${PARTITIONS - 1}`);
    const gateway = await spawnTailbase('gateway', [
      '--log',
      logUrl,
      '--serve',
      `${low.url},${high.url}`,
    ]);
    processes.push(gateway);
    const url = gateway.url;
    const run = await measureApi(
      url,
      () => new CpuWindow({ gateway: [gateway], 'log-node': [log], 'serve-nodes': [low, high] }),
      options.quick === true,
    );
    const where = 'log-node, 2 serve-nodes, gateway (log by Kafka)';

    // Started only now, so the loads above ran against the two-node topology alone; it replays the
    // log and the wait below lets it catch up.
    const single = await serve(`0-${PARTITIONS - 1}`);
    const wholeIndex = new HttpServeClient(single.url);
    // The whole-index node waits for every record the log holds now, the corpus included.
    const status = await request(`${url}/v1/status`);
    const ends = status.body.partitions as {
      topic: string;
      partition: number;
      endOffset: number;
    }[];
    const waitFor = Object.fromEntries(
      ends
        .filter((p) => p.topic === 'corpus' && p.endOffset > 0)
        .map((p) => [p.partition, p.endOffset - 1]),
    );
    const skew = skewQueries(run.corpus, SKEW_QUERIES);
    const overlap = { at10: 0, at3: 0 };
    for (const q of skew) {
      const merged = await request(
        `${url}/v1/collections/corpus/search?q=${encodeURIComponent(q)}&limit=10`,
      );
      const whole = await wholeIndex.search('corpus', { q, limit: 10, waitFor, waitMs: 30_000 });
      const expected = whole.hits.map((h) => h.key);
      const got = (merged.body.hits as { key: string }[]).map((h) => h.key);
      if (expected.length < 10) throw new Error(`skew query "${q}" has ${expected.length} hits`);
      for (const [k, name] of [
        [10, 'at10'],
        [3, 'at3'],
      ] as const) {
        const top = new Set(expected.slice(0, k));
        overlap[name] += got.slice(0, k).filter((key) => top.has(key)).length / k / skew.length;
      }
    }
    wholeIndex.close();

    const rss = {
      gateway: gateway.peakRssBytes(),
      'log-node': log.peakRssBytes(),
      'serve-nodes': Math.max(low.peakRssBytes(), high.peakRssBytes()),
    };
    return {
      workloads: [
        ...apiWorkloads(group, run, hono, rss, TARGETS, where),
        {
          group: 'gateway',
          name: 'search skew',
          description:
            `top-k overlap of the merged ranking over 2 serve-nodes with one serve-node holding ` +
            `every partition (one FTS5 index), ${skew.length} queries of terms in >= 20 documents`,
          figures: { queries: skew.length, overlapAt10: overlap.at10, overlapAt3: overlap.at3 },
          ratios: [
            { reference: 'one index, overlap@10', value: overlap.at10 },
            { reference: 'one index, overlap@3', value: overlap.at3 },
          ],
          peakRssBytes: rss,
        },
      ],
    };
  } finally {
    await Promise.all(processes.map((p) => p.stop()));
    await log.stop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
}

export function skipRow(group: string, skipped: string): WorkloadResult {
  return {
    group,
    name: 'put',
    description: '',
    figures: {},
    ratios: [],
    peakRssBytes: {},
    skipped,
  };
}
