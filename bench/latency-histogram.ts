/**
 * A fixed-size log-bucketed latency histogram: 1 % resolution from 1 µs to 100 s in under two
 * thousand buckets, so a recorder never grows with the number of requests it has seen.
 */
import type { LatencySummary } from './types.js';

const GROWTH = 1.01;
const MIN_US = 1;
const MAX_US = 100_000_000;
const BUCKET_COUNT = Math.ceil(Math.log(MAX_US / MIN_US) / Math.log(GROWTH)) + 1;

export class LatencyHistogram {
  private readonly buckets = new Float64Array(BUCKET_COUNT);
  private count = 0;
  private maxUs = 0;

  recordMs(latencyMs: number): void {
    const us = Math.min(Math.max(latencyMs * 1000, MIN_US), MAX_US);
    this.buckets[Math.floor(Math.log(us / MIN_US) / Math.log(GROWTH))] += 1;
    this.count += 1;
    if (us > this.maxUs) this.maxUs = us;
  }

  merge(other: LatencyHistogram): void {
    for (let i = 0; i < BUCKET_COUNT; i++) this.buckets[i] += other.buckets[i];
    this.count += other.count;
    this.maxUs = Math.max(this.maxUs, other.maxUs);
  }

  /** The upper bound of the bucket holding quantile q (0..1), in milliseconds. */
  quantileMs(q: number): number {
    if (this.count === 0) return 0;
    const rank = Math.max(1, Math.ceil(q * this.count));
    let seen = 0;
    for (let i = 0; i < BUCKET_COUNT; i++) {
      seen += this.buckets[i];
      if (seen >= rank) return Math.min(MIN_US * GROWTH ** (i + 1), this.maxUs) / 1000;
    }
    return this.maxUs / 1000;
  }

  summary(): LatencySummary {
    return {
      p50Ms: this.quantileMs(0.5),
      p99Ms: this.quantileMs(0.99),
      maxMs: this.maxUs / 1000,
      count: this.count,
    };
  }
}
