/**
 * The results chart as a hand-written SVG: throughput per workload (log scale, references in
 * grey beside them) and p50/p99 latency per workload (log scale). No plotting dependency.
 */
import { formatMs, formatRate } from './format.js';
import type { References, WorkloadResult } from './types.js';

const WIDTH = 1100;
const ROW_HEIGHT = 30;
const TOP = 70;
const LABEL_WIDTH = 260;
const PANEL_GAP = 40;
const PANEL_WIDTH = (WIDTH - LABEL_WIDTH - PANEL_GAP - 20) / 2;
/** Room kept right of the longest bar for its value label. */
const VALUE_LABEL_WIDTH = 150;
const COLORS = { bar: '#3b6ea8', reference: '#9a9a9a', p50: '#7fb77e', p99: '#d9822b' };

interface Row {
  label: string;
  rate?: number;
  unit?: string;
  p50Ms?: number;
  p99Ms?: number;
  reference: boolean;
}

function escapeXml(text: string): string {
  return text.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Maps value to [0, width] on a log scale spanning whole decades around the data. */
function logScale(values: number[], width: number): (v: number) => number {
  const positive = values.filter((v) => v > 0);
  const low = Math.floor(Math.log10(Math.min(...positive, 1)));
  const high = Math.ceil(Math.log10(Math.max(...positive, 10)));
  const span = Math.max(high - low, 1);
  return (v) => (v <= 0 ? 0 : ((Math.log10(v) - low) / span) * width);
}

function rows(workloads: WorkloadResult[], references: References): Row[] {
  const measured = workloads
    .filter((w) => w.skipped === undefined && w.error === undefined)
    .map((w) => ({
      label: `${w.group}: ${w.name}`,
      rate: w.throughput?.value,
      unit: w.throughput?.unit,
      p50Ms: w.latency?.p50Ms,
      p99Ms: w.latency?.p99Ms,
      reference: false,
    }));
  const refs = Object.values(references).map((r) => ({
    label: `reference: ${r.name}`,
    rate: r.value,
    unit: r.unit,
    reference: true,
  }));
  return [...measured, ...refs];
}

export function renderChart(
  title: string,
  workloads: WorkloadResult[],
  references: References,
): string {
  const data = rows(workloads, references);
  const height = TOP + data.length * ROW_HEIGHT + 40;
  const rateX = logScale(
    data.map((r) => r.rate ?? 0),
    PANEL_WIDTH - VALUE_LABEL_WIDTH,
  );
  const msX = logScale(
    data.flatMap((r) => [r.p50Ms ?? 0, r.p99Ms ?? 0]),
    PANEL_WIDTH - VALUE_LABEL_WIDTH,
  );
  const left = LABEL_WIDTH;
  const right = LABEL_WIDTH + PANEL_WIDTH + PANEL_GAP;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    `<text x="10" y="22" font-size="16" font-weight="bold">${escapeXml(title)}</text>`,
    `<text x="${left}" y="${TOP - 12}" font-weight="bold">throughput per second (log scale)</text>`,
    `<text x="${right}" y="${TOP - 12}" font-weight="bold">latency ms (log scale): ` +
      `<tspan fill="${COLORS.p50}">p50</tspan> / <tspan fill="${COLORS.p99}">p99</tspan></text>`,
  ];
  data.forEach((r, i) => {
    const y = TOP + i * ROW_HEIGHT;
    parts.push(`<text x="10" y="${y + 15}">${escapeXml(r.label)}</text>`);
    if (r.rate !== undefined) {
      const w = Math.max(rateX(r.rate), 1);
      const fill = r.reference ? COLORS.reference : COLORS.bar;
      parts.push(
        `<rect x="${left}" y="${y + 4}" width="${w.toFixed(1)}" height="16" fill="${fill}"/>`,
      );
      parts.push(
        `<text x="${(left + w + 4).toFixed(1)}" y="${y + 16}">${escapeXml(`${formatRate(r.rate)} ${r.unit ?? ''}`)}</text>`,
      );
    }
    if (r.p50Ms !== undefined && r.p99Ms !== undefined) {
      const w50 = Math.max(msX(r.p50Ms), 1);
      const w99 = Math.max(msX(r.p99Ms), 1);
      parts.push(
        `<rect x="${right}" y="${y + 3}" width="${w50.toFixed(1)}" height="9" fill="${COLORS.p50}"/>`,
      );
      parts.push(
        `<rect x="${right}" y="${y + 13}" width="${w99.toFixed(1)}" height="9" fill="${COLORS.p99}"/>`,
      );
      parts.push(
        `<text x="${(right + Math.max(w50, w99) + 4).toFixed(1)}" y="${y + 16}">${formatMs(r.p50Ms)} / ${formatMs(r.p99Ms)}</text>`,
      );
    }
  });
  parts.push('</svg>');
  return parts.join('\n') + '\n';
}
