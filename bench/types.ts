/**
 * The shapes every benchmark workload returns, so run.ts can print one table, one results file
 * and one chart whatever group a figure came from. serve.ts and gateway.ts may return these
 * (`{ workloads: WorkloadResult[] }`) or any plain object; run.ts normalizes the latter.
 */

export interface LatencySummary {
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  count: number;
}

export interface Ratio {
  /** The reference's name, e.g. `disk fsync/s`. */
  reference: string;
  value: number;
}

export interface CpuShare {
  /** Percent of every core's time that was busy, any process (-1 where unknown). */
  machineBusyPercent: number;
  /** CPU microseconds per request of each role under test. */
  microsPerRequest: Record<string, number>;
}

export interface WorkloadResult {
  group: string;
  name: string;
  description: string;
  /** The headline rate: what the chart's bars show. */
  throughput?: { value: number; unit: string };
  latency?: LatencySummary;
  /** Every other figure, named with its unit last (`mbPerSec`, `errorCount`). */
  figures: Record<string, number | string>;
  ratios: Ratio[];
  /** Peak resident set of each process under test, by role. */
  peakRssBytes: Record<string, number>;
  /** Where the load's CPU went (bench/cpu-share.ts). */
  cpu?: CpuShare;
  /** A target from the issues, stated and checked, never used to tune the measurement. */
  targets?: { name: string; goal: string; met: boolean }[];
  /** Why the workload did not run (its part is not built yet, a peer is missing). */
  skipped?: string;
  /** The workload ran and failed: the suite exits non-zero. */
  error?: string;
}

export interface BenchOptions {
  quick: boolean;
}

export interface Reference {
  name: string;
  value: number;
  unit: string;
  detail: Record<string, number | string>;
}

export interface References {
  fsyncPerSec?: Reference;
  seqWriteMbPerSec?: Reference;
  honoReqPerSec?: Reference;
}
