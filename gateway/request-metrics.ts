/**
 * The request counter and latency histogram, kept per (method, route) as plain counts and handed
 * to prom-client's registry only when it is scraped. prom-client's own Counter and Histogram
 * convert, validate and hash the label set on every observation, child handles included (their
 * `labels()` only binds the set): 2-3 µs a request on the HTTP thread, which a bare handler
 * never pays (issue 28). Here a request costs one Map lookup by a string the route already has.
 * The exposition is prom-client's: same names, types, labels and cumulative buckets.
 */
import type { Metric, Registry } from 'prom-client';

export interface RequestMetricsOptions {
  countName: string;
  countHelp: string;
  secondsName: string;
  secondsHelp: string;
  /** Upper bounds of the latency buckets, seconds, ascending. */
  bucketsSeconds: readonly number[];
}

interface RouteSeries {
  method: string;
  route: string;
  /** Observations per bucket (not cumulative), the last one +Inf's. */
  buckets: number[];
  sum: number;
  count: number;
  /** HTTP status → requests answered with it. */
  statuses: Map<number, number>;
}

type Labels = Record<string, string | number>;
interface Sample {
  metricName?: string;
  labels: Labels;
  value: number;
}

export class RequestMetrics {
  private readonly series = new Map<string, RouteSeries>();

  constructor(
    registry: Registry,
    private readonly options: RequestMetricsOptions,
  ) {
    registry.registerMetric(
      this.exposed(options.countName, options.countHelp, 'counter', () => this.countSamples()),
    );
    registry.registerMetric(
      this.exposed(options.secondsName, options.secondsHelp, 'histogram', () =>
        this.secondsSamples(),
      ),
    );
  }

  /** One answered request. */
  observe(method: string, route: string, status: number, seconds: number): void {
    const id = `${method} ${route}`;
    let series = this.series.get(id);
    if (series === undefined) {
      const buckets = new Array<number>(this.options.bucketsSeconds.length + 1).fill(0);
      series = { method, route, buckets, sum: 0, count: 0, statuses: new Map() };
      this.series.set(id, series);
    }
    const bounds = this.options.bucketsSeconds;
    let bucket = 0;
    while (bucket < bounds.length && seconds > bounds[bucket]) bucket++;
    series.buckets[bucket]++;
    series.sum += seconds;
    series.count++;
    series.statuses.set(status, (series.statuses.get(status) ?? 0) + 1);
  }

  private countSamples(): Sample[] {
    const samples: Sample[] = [];
    for (const { method, route, statuses } of this.series.values()) {
      for (const [status, value] of statuses) {
        samples.push({ labels: { method, route, status: String(status) }, value });
      }
    }
    return samples;
  }

  private secondsSamples(): Sample[] {
    const name = this.options.secondsName;
    const samples: Sample[] = [];
    for (const { method, route, buckets, sum, count } of this.series.values()) {
      let cumulative = 0;
      buckets.forEach((observed, i) => {
        cumulative += observed;
        const le = i < this.options.bucketsSeconds.length ? this.options.bucketsSeconds[i] : '+Inf';
        samples.push({
          metricName: `${name}_bucket`,
          labels: { le, method, route },
          value: cumulative,
        });
      });
      samples.push({ metricName: `${name}_sum`, labels: { method, route }, value: sum });
      samples.push({ metricName: `${name}_count`, labels: { method, route }, value: count });
    }
    return samples;
  }

  /**
   * A metric as the registry reads one (name, help, type, aggregator, get, reset): its
   * declaration lists only prom-client's four classes, so the shape is handed over as one.
   */
  private exposed(
    name: string,
    help: string,
    type: 'counter' | 'histogram',
    samples: () => Sample[],
  ): Metric {
    const metric = {
      name,
      help,
      type,
      aggregator: 'sum',
      get: async () => ({ name, help, type, aggregator: 'sum', values: samples() }),
      reset: () => this.series.clear(),
    };
    return metric as unknown as Metric;
  }
}
