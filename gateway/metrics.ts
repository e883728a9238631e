/**
 * Prometheus metrics (prom-client), in a registry of this gateway's own so several gateways in
 * one process (tests, the embedded mode) do not collide.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { ServePartitionStatus } from '../shared/serve-api.js';
import { RequestMetrics } from './request-metrics.js';
import type { ServeTopology } from './topology.js';

export interface GatewayMetrics {
  registry: Registry;
  /** `tailbase_gateway_requests_total` and `tailbase_gateway_request_duration_seconds`. */
  requests: RequestMetrics;
  batchRecords: Histogram<'topic' | 'partition'>;
  batchBytes: Histogram<'topic' | 'partition'>;
  appendSeconds: Histogram<'topic' | 'partition'>;
  /** Records change feeds read below their start to count a view partition's epochs. */
  feedEpochRecords: Counter;
}

export function createMetrics(topology: ServeTopology): GatewayMetrics {
  const registry = new Registry();
  partitionGauge(
    registry,
    topology,
    'tailbase_gateway_partition_lag_records',
    'Records a serve-node has not applied yet, per topic-partition and serve-node',
    (p) => p.lag,
  );
  partitionGauge(
    registry,
    topology,
    'tailbase_gateway_partition_failed',
    'Whether a serve-node reports an error reading a topic-partition (1) or not (0), per serve-node',
    (p) => (p.error === undefined ? 0 : 1),
  );
  return {
    registry,
    requests: new RequestMetrics(registry, {
      countName: 'tailbase_gateway_requests_total',
      countHelp: 'HTTP requests answered, by route and status',
      secondsName: 'tailbase_gateway_request_duration_seconds',
      secondsHelp: 'HTTP request latency',
      bucketsSeconds: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5],
    }),
    batchRecords: new Histogram({
      name: 'tailbase_gateway_batch_records',
      help: 'Records per appended batch',
      labelNames: ['topic', 'partition'] as const,
      buckets: [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000],
      registers: [registry],
    }),
    batchBytes: new Histogram({
      name: 'tailbase_gateway_batch_bytes',
      help: 'Bytes per appended batch',
      labelNames: ['topic', 'partition'] as const,
      buckets: [256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304],
      registers: [registry],
    }),
    appendSeconds: new Histogram({
      name: 'tailbase_gateway_append_duration_seconds',
      help: 'Time from sending a batch to the log to its fsynced acknowledgement',
      labelNames: ['topic', 'partition'] as const,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1],
      registers: [registry],
    }),
    feedEpochRecords: new Counter({
      name: 'tailbase_gateway_feed_epoch_records_total',
      help: "Records change feeds read below their start to count a view partition's epochs",
      registers: [registry],
    }),
  };
}

/** A gauge of each serve-node's topic-partitions, read from their last statuses when scraped. */
function partitionGauge(
  registry: Registry,
  topology: ServeTopology,
  name: string,
  help: string,
  valueOf: (partition: ServePartitionStatus) => number,
): void {
  new Gauge({
    name,
    help,
    labelNames: ['topic', 'partition', 'node'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const node of topology.nodes) {
        for (const p of node.status?.partitions ?? []) {
          this.set(
            { topic: p.topic, partition: String(p.partition), node: String(node.index) },
            valueOf(p),
          );
        }
      }
    },
  });
}
