// Proves the bench's reporting is faithful: percentiles land within the histogram's 1 % buckets,
// foreign group results become table rows, the chart and table render every workload, and a CPU
// window charges a real process's CPU per request.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { CpuWindow } from '../../bench/cpu-share.js';
import { renderChart } from '../../bench/chart.js';
import { LatencyHistogram } from '../../bench/latency-histogram.js';
import { normalizeGroup } from '../../bench/normalize.js';
import { aptLine, type PeerName } from '../../bench/peers.js';
import { readCpuSeconds, type RunningProcess } from '../../bench/processes.js';
import { cpuTable, workloadTable } from '../../bench/table.js';
import type { WorkloadResult } from '../../bench/types.js';

describe('LatencyHistogram', () => {
  it('reports quantiles within 1 % of the exact sample quantile', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: 0.001, max: 10_000, noNaN: true }), {
          minLength: 1,
          maxLength: 500,
        }),
        (samples) => {
          const histogram = new LatencyHistogram();
          for (const s of samples) histogram.recordMs(s);
          const sorted = [...samples].sort((a, b) => a - b);
          for (const q of [0.5, 0.99]) {
            const exact = sorted[Math.max(1, Math.ceil(q * sorted.length)) - 1];
            const reported = histogram.quantileMs(q);
            expect(reported).toBeGreaterThanOrEqual(exact * 0.999);
            expect(reported).toBeLessThanOrEqual(exact * 1.0101 + 1e-9);
          }
          expect(histogram.summary().count).toBe(samples.length);
        },
      ),
      { seed: 42, numRuns: 200 },
    );
  });
});

describe('normalizeGroup', () => {
  it('reads a loose object of figures by key names', () => {
    const rows = normalizeGroup('serve', {
      get: { opsPerSec: 12_000, p50Ms: 1.5, p99Ms: 7, peakRssBytes: 1e8 },
      search: { queriesPerSec: 800, p50Us: 2000, p99Us: 9000 },
    });
    expect(rows.map((r) => r.name)).toEqual(['serve get', 'serve search']);
    expect(rows[0].throughput).toEqual({ value: 12_000, unit: 'opsPerSec' });
    expect(rows[0].latency).toMatchObject({ p50Ms: 1.5, p99Ms: 7 });
    expect(rows[0].peakRssBytes).toEqual({ peakRssBytes: 1e8 });
    expect(rows[1].latency).toMatchObject({ p50Ms: 2, p99Ms: 9 });
  });

  it('keeps shaped workloads and skips as they are', () => {
    const shaped: WorkloadResult = {
      group: 'gateway',
      name: 'put',
      description: 'PUT one doc',
      throughput: { value: 5000, unit: 'req/s' },
      figures: {},
      ratios: [],
      peakRssBytes: { gateway: 1 },
    };
    expect(normalizeGroup('gateway', { workloads: [shaped] })).toEqual([shaped]);
    expect(normalizeGroup('serve', { skipped: 'no serve-node' })[0].skipped).toBe('no serve-node');
  });
});

describe('rendering', () => {
  const workloads: WorkloadResult[] = [
    {
      group: 'log',
      name: 'append <batched>',
      description: '',
      throughput: { value: 500_000, unit: 'records/s' },
      latency: { p50Ms: 3, p99Ms: 12, maxMs: 40, count: 100 },
      figures: {},
      ratios: [{ reference: 'disk seq write MB/s', value: 0.4 }],
      peakRssBytes: { 'log-node': 200 * 2 ** 20 },
      targets: [{ name: 'records/s', goal: '>= 500000', met: true }],
    },
    {
      group: 'serve',
      name: 'serve',
      description: '',
      figures: {},
      ratios: [],
      peakRssBytes: {},
      skipped: 'skipped: not built yet',
    },
  ];
  const references = {
    fsyncPerSec: { name: 'disk fsync/s', value: 300, unit: 'fsync/s', detail: {} },
  };

  it('prints every workload with its ratio, target and skip reason', () => {
    const table = workloadTable(workloads);
    expect(table).toContain('500,000 records/s');
    expect(table).toContain('0.40x disk seq write MB/s');
    expect(table).toContain('met records/s >= 500000');
    expect(table).toContain('skipped: not built yet');
  });

  it('prints where the CPU went for the workloads that measured it, and no table otherwise', () => {
    expect(cpuTable(workloads)).toBeNull();
    const measured: WorkloadResult = {
      ...workloads[0],
      cpu: { machineBusyPercent: 71.4, microsPerRequest: { gateway: 100.2, 'log-node': 60 } },
    };
    const table = cpuTable([measured, workloads[1]])!;
    expect(table).toContain('71%');
    expect(table).toContain('gateway 100, log-node 60');
    expect(table).not.toContain('not built yet');
  });

  it('draws a bar per measured workload and reference, with labels escaped', () => {
    const svg = renderChart('bench', workloads, references);
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg).toContain('log: append &#60;batched&#62;');
    expect(svg).toContain('reference: disk fsync/s');
    expect(svg).not.toContain('serve: serve');
    expect(svg.match(/<rect /g)?.length).toBe(1 + 1 + 2 + 1);
  });
});

describe('aptLine', () => {
  it('names exactly the missing peers’ packages, or nothing when all are installed', () => {
    const peer = (name: PeerName, installed: boolean) => ({
      name,
      aptPackage: `${name}-server`,
      binary: installed ? `/usr/bin/${name}` : null,
      note: '',
    });
    expect(aptLine([peer('etcd', false), peer('redis', true), peer('nats', false)])).toBe(
      'apt-get install -y etcd-server nats-server',
    );
    expect(aptLine([peer('redis', true)])).toBeNull();
  });
});

describe.runIf(process.platform === 'linux')('CpuWindow', () => {
  it("charges a process's CPU burnt inside the window, per request", async () => {
    // Starts, says so, burns 300 ms of CPU when told to, says so, then idles until killed. The
    // burn is counted in CPU time, not wall time: on a busy machine 300 ms of wall time may hold
    // half as much CPU.
    const script = `
      process.stdout.write('ready\\n');
      const cpuMicros = () => process.cpuUsage().user + process.cpuUsage().system;
      process.stdin.once('data', () => {
        const until = cpuMicros() + 300_000;
        while (cpuMicros() < until);
        process.stdout.write('done\\n');
      });
      setInterval(() => {}, 1000);`;
    const child = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
    try {
      const lines = child.stdout!.setEncoding('utf8');
      expect(String((await once(lines, 'data'))[0])).toContain('ready');
      const proc = { cpuSeconds: () => readCpuSeconds(child.pid!) } as RunningProcess;
      const window = new CpuWindow({ child: [proc] });
      child.stdin!.write('go\n');
      expect(String((await once(lines, 'data'))[0])).toContain('done');
      // 300 ms over 100 requests is 3,000 µs each; /proc counts in 10 ms ticks.
      const micros = window.microsPerRequest(100).child;
      expect(micros).toBeGreaterThanOrEqual(2_500);
      expect(micros).toBeLessThanOrEqual(4_500);
      const busy = window.machineBusyPercent();
      expect(busy).toBeGreaterThan(0);
      expect(busy).toBeLessThanOrEqual(100);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
