/**
 * Prometheus metrics (prom-client), in a registry of this gateway's own so several gateways in
 * one process (tests, the embedded mode) do not collide.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { ServeTopology } from './topology.js';

export interface GatewayMetrics {
  registry: Registry;
  requests: Counter<'method' | 'route' | 'status'>;
  requestSeconds: Histogram<'method' | 'route'>;
  batchRecords: Histogram<'topic' | 'partition'>;
  batchBytes: Histogram<'topic' | 'partition'>;
  appendSeconds: Histogram<'topic' | 'partition'>;
}

export function createMetrics(topology: ServeTopology): GatewayMetrics {
  const registry = new Registry();
  new Gauge({
    name: 'tailbase_gateway_partition_lag_records',
    help: 'Records a serve-node has not applied yet, per topic-partition and serve-node',
    labelNames: ['topic', 'partition', 'node'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const node of topology.nodes) {
        for (const p of node.status?.partitions ?? []) {
          const labels = { topic: p.topic, partition: String(p.partition) };
          this.set({ ...labels, node: String(node.index) }, p.lag);
        }
      }
    },
  });
  return {
    registry,
    requests: new Counter({
      name: 'tailbase_gateway_requests_total',
      help: 'HTTP requests answered, by route and status',
      labelNames: ['method', 'route', 'status'] as const,
      registers: [registry],
    }),
    requestSeconds: new Histogram({
      name: 'tailbase_gateway_request_duration_seconds',
      help: 'HTTP request latency',
      labelNames: ['method', 'route'] as const,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5],
      registers: [registry],
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
  };
}
