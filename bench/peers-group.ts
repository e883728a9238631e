/**
 * The peers group: each installed peer's workloads, a skip row naming the apt package for each
 * missing one, and tailbase/peer ratios written onto the tailbase rows they compare with.
 */
import { runEtcdBench } from './peer-etcd.js';
import { NATS_PUBLISH, runNatsBench } from './peer-nats.js';
import { POSTGRES_SEARCH_SAME_WORK, runPostgresBench } from './peer-postgres.js';
import { runRedisBench } from './peer-redis.js';
import { detectPeers, type PeerName } from './peers.js';
import type { BenchOptions, WorkloadResult } from './types.js';

/** Runs one peer's workloads against the server binary detectPeers() found. */
type PeerRunner = (options: BenchOptions, binary: string) => Promise<WorkloadResult[]>;

const RUNNERS: Record<PeerName, PeerRunner> = {
  etcd: runEtcdBench,
  redis: runRedisBench,
  nats: runNatsBench,
  postgres: runPostgresBench,
};

/** Which tailbase workload each peer workload is the same work as (same concurrency, durability). */
const COMPARISONS: { tailbase: [string, string]; peer: string }[] = [
  { tailbase: ['log', 'append single-record'], peer: 'redis XADD' },
  { tailbase: ['log', 'append single-record'], peer: NATS_PUBLISH },
  { tailbase: ['gateway', 'put'], peer: 'postgres INSERT' },
  { tailbase: ['gateway', 'get'], peer: 'postgres SELECT' },
  { tailbase: ['gateway', 'put'], peer: 'etcd put' },
  // The gateway's plain GET is eventual: the same promise as etcd's serializable read.
  { tailbase: ['gateway', 'get'], peer: 'etcd get serializable' },
  { tailbase: ['gateway', 'search'], peer: 'postgres search' },
  { tailbase: ['gateway', 'search'], peer: POSTGRES_SEARCH_SAME_WORK },
  { tailbase: ['embedded', 'put'], peer: 'postgres INSERT' },
  { tailbase: ['embedded', 'get'], peer: 'postgres SELECT' },
  { tailbase: ['embedded', 'search'], peer: 'postgres search' },
  { tailbase: ['embedded', 'search'], peer: POSTGRES_SEARCH_SAME_WORK },
];

function skipRow(name: string, reason: string): WorkloadResult {
  return {
    group: 'peers',
    name,
    description: '',
    figures: {},
    ratios: [],
    peakRssBytes: {},
    skipped: reason,
  };
}

export async function runPeersBench(options: BenchOptions): Promise<WorkloadResult[]> {
  const results: WorkloadResult[] = [];
  for (const peer of detectPeers()) {
    const runner = RUNNERS[peer.name];
    if (peer.binary === null) {
      results.push(
        skipRow(peer.name, `skipped: not installed (apt-get install -y ${peer.aptPackage})`),
      );
    } else {
      results.push(...(await runner(options, peer.binary)));
    }
  }
  return results;
}

export function addPeerRatios(workloads: WorkloadResult[]): void {
  for (const { tailbase, peer } of COMPARISONS) {
    const ours = workloads.find((w) => w.group === tailbase[0] && w.name === tailbase[1]);
    const theirs = workloads.find((w) => w.group === 'peers' && w.name === peer);
    if (ours?.throughput && theirs?.throughput && theirs.throughput.value > 0) {
      ours.ratios.push({ reference: peer, value: ours.throughput.value / theirs.throughput.value });
    }
  }
}
