/**
 * The scale group's curves as a hand-written SVG: one log-log panel a figure (documents along x),
 * tailbase's series solid and PostgreSQL's dashed, so how each grows with the data reads at a
 * glance. No plotting dependency, as chart.ts.
 */
import { formatRate } from './format.js';

export interface Series {
  label: string;
  /** [documents, value]; values <= 0 are left out (not measured). */
  points: Array<[number, number]>;
  peer?: boolean;
}

export interface Panel {
  title: string;
  unit: string;
  series: Series[];
}

const COLUMNS = 3;
const PANEL_WIDTH = 380;
const PANEL_HEIGHT = 300;
const PLOT = { left: 56, right: 12, top: 28, bottom: 36 };
const LEGEND_ROW_HEIGHT = 14;
const TITLE_HEIGHT = 40;
const COLORS = ['#3b6ea8', '#d9822b', '#7fb77e', '#b5466b', '#8c6bb1', '#5f9ea0'];

function escapeXml(text: string): string {
  return text.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Whole decades around `values`, at least one. */
function decades(values: number[]): [number, number] {
  const low = Math.floor(Math.log10(Math.min(...values)));
  const high = Math.ceil(Math.log10(Math.max(...values)));
  return [low, Math.max(high, low + 1)];
}

function panelSvg(panel: Panel, x0: number, y0: number): string {
  const series = panel.series.map((s) => ({ ...s, points: s.points.filter(([, v]) => v > 0) }));
  const all = series.flatMap((s) => s.points);
  const legendHeight = series.length * LEGEND_ROW_HEIGHT;
  const width = PANEL_WIDTH - PLOT.left - PLOT.right;
  const height = PANEL_HEIGHT - PLOT.top - PLOT.bottom - legendHeight;
  const parts = [
    `<text x="${x0 + PLOT.left}" y="${y0 + 16}" font-weight="bold">${escapeXml(`${panel.title} (${panel.unit})`)}</text>`,
  ];
  if (all.length === 0) return parts.join('');
  const [xLow, xHigh] = decades(all.map(([x]) => x));
  const [yLow, yHigh] = decades(all.map(([, y]) => y));
  const px = (x: number) => x0 + PLOT.left + ((Math.log10(x) - xLow) / (xHigh - xLow)) * width;
  const py = (y: number) =>
    y0 + PLOT.top + height - ((Math.log10(y) - yLow) / (yHigh - yLow)) * height;
  parts.push(
    `<rect x="${x0 + PLOT.left}" y="${y0 + PLOT.top}" width="${width}" height="${height}" fill="none" stroke="#cccccc"/>`,
  );
  for (let d = xLow; d <= xHigh; d++) {
    parts.push(
      `<text x="${px(10 ** d)}" y="${y0 + PLOT.top + height + 14}" text-anchor="middle" fill="#555555">10^${d}</text>`,
    );
  }
  for (let d = yLow; d <= yHigh; d++) {
    const y = py(10 ** d);
    parts.push(
      `<line x1="${x0 + PLOT.left}" x2="${x0 + PLOT.left + width}" y1="${y}" y2="${y}" stroke="#eeeeee"/>`,
      `<text x="${x0 + PLOT.left - 4}" y="${y + 4}" text-anchor="end" fill="#555555">${formatRate(10 ** d)}</text>`,
    );
  }
  series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length];
    const dash = s.peer ? ' stroke-dasharray="5,3"' : '';
    const path = s.points.map(([x, y]) => `${px(x).toFixed(1)},${py(y).toFixed(1)}`).join(' ');
    parts.push(
      `<polyline points="${path}" fill="none" stroke="${color}" stroke-width="2"${dash}/>`,
      ...s.points.map(
        ([x, y]) =>
          `<circle cx="${px(x).toFixed(1)}" cy="${py(y).toFixed(1)}" r="3" fill="${color}"/>`,
      ),
    );
    const legendY = y0 + PLOT.top + height + 30 + i * LEGEND_ROW_HEIGHT;
    parts.push(
      `<line x1="${x0 + PLOT.left}" x2="${x0 + PLOT.left + 20}" y1="${legendY - 4}" y2="${legendY - 4}" stroke="${color}" stroke-width="2"${dash}/>`,
      `<text x="${x0 + PLOT.left + 26}" y="${legendY}">${escapeXml(s.label)}</text>`,
    );
  });
  return parts.join('\n');
}

export function renderCurves(title: string, panels: Panel[]): string {
  const rows = Math.ceil(panels.length / COLUMNS);
  const width = COLUMNS * PANEL_WIDTH;
  const height = TITLE_HEIGHT + rows * PANEL_HEIGHT;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    `<text x="10" y="24" font-size="16" font-weight="bold">${escapeXml(title)}</text>`,
    ...panels.map((panel, i) =>
      panelSvg(
        panel,
        (i % COLUMNS) * PANEL_WIDTH,
        TITLE_HEIGHT + Math.floor(i / COLUMNS) * PANEL_HEIGHT,
      ),
    ),
    '</svg>',
    '',
  ].join('\n');
}
