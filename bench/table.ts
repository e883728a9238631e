/** The terminal table: one row a workload, every reference ratio and target beside its figure. */
import { formatBytes, formatMs, formatRate, formatRatio } from './format.js';
import type { References, WorkloadResult } from './types.js';

const HEADERS = [
  'group',
  'workload',
  'throughput',
  'p50 ms',
  'p99 ms',
  'peak RSS',
  'errors',
  'vs reference',
  'targets',
];

function row(w: WorkloadResult): string[] {
  if (w.skipped !== undefined || w.error !== undefined) {
    // In the last column, so a long reason does not widen the figures' columns.
    const why = w.error !== undefined ? `FAILED: ${w.error}` : (w.skipped ?? '');
    return [w.group, w.name, '-', '-', '-', '-', '-', '-', why];
  }
  const rss = Object.values(w.peakRssBytes);
  return [
    w.group,
    w.name,
    w.throughput ? `${formatRate(w.throughput.value)} ${w.throughput.unit}` : '-',
    w.latency ? formatMs(w.latency.p50Ms) : '-',
    w.latency ? formatMs(w.latency.p99Ms) : '-',
    rss.length > 0 ? rss.map(formatBytes).join(' + ') : '-',
    // Non-2xx answers and socket errors: not counted in the throughput, shown so none go unseen.
    typeof w.figures.errorCount === 'number' ? String(w.figures.errorCount) : '-',
    w.ratios.map((r) => `${formatRatio(r.value)} ${r.reference}`).join('; ') || '-',
    (w.targets ?? []).map((t) => `${t.met ? 'met' : 'MISSED'} ${t.name} ${t.goal}`).join('; ') ||
      '-',
  ];
}

export function renderTable(rows: string[][], headers: string[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  return [line(headers), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

export function workloadTable(workloads: WorkloadResult[]): string {
  return renderTable(workloads.map(row), HEADERS);
}

/** Where each load's CPU went, for the workloads that measured it. */
export function cpuTable(workloads: WorkloadResult[]): string | null {
  const measured = workloads.filter((w) => w.cpu !== undefined);
  if (measured.length === 0) return null;
  const rows = measured.map((w) => [
    w.group,
    w.name,
    w.cpu!.machineBusyPercent < 0 ? '-' : `${w.cpu!.machineBusyPercent.toFixed(0)}%`,
    Object.entries(w.cpu!.microsPerRequest)
      .map(([role, micros]) => `${role} ${micros.toFixed(0)}`)
      .join(', '),
  ]);
  return renderTable(rows, ['group', 'workload', 'machine busy', 'CPU µs per request']);
}

export function referenceTable(references: References): string {
  const rows = Object.values(references).map((r) => [
    r.name,
    `${formatRate(r.value)} ${r.unit}`,
    Object.entries(r.detail)
      .map(([k, v]) => `${k}=${typeof v === 'number' ? formatRate(v) : v}`)
      .join(' '),
  ]);
  return renderTable(rows, ['reference', 'value', 'detail']);
}
