/**
 * Turns what a workload group returned into WorkloadResult rows. Groups written by other nodes'
 * authors may return `{ workloads: WorkloadResult[] }`, an array of them, or any plain object of
 * figures; the last is read by key names (`...PerSec`, `p50...`, `p99...`, `...Rss...`).
 */
import type { LatencySummary, WorkloadResult } from './types.js';

type Plain = Record<string, unknown>;

function isPlain(value: unknown): value is Plain {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function flatten(value: Plain, prefix = '', out: Record<string, number | string> = {}) {
  for (const [key, v] of Object.entries(value)) {
    const name = prefix ? `${prefix}.${key}` : key;
    if (typeof v === 'number' || typeof v === 'string') out[name] = v;
    else if (typeof v === 'boolean') out[name] = String(v);
    else if (isPlain(v)) flatten(v, name, out);
  }
  return out;
}

function findNumber(figures: Record<string, number | string>, pattern: RegExp) {
  for (const [key, v] of Object.entries(figures)) {
    if (typeof v === 'number' && pattern.test(key)) return { key, value: v };
  }
  return undefined;
}

function inMs(found: { key: string; value: number } | undefined): number | undefined {
  if (found === undefined) return undefined;
  return /us$|micro/i.test(found.key) ? found.value / 1000 : found.value;
}

function fromLoose(group: string, name: string, raw: Plain): WorkloadResult {
  const figures = flatten(raw);
  const rate = findNumber(figures, /per_?sec|persecond|\/s$|rps|throughput/i);
  const p50 = inMs(findNumber(figures, /p50/i));
  const p99 = inMs(findNumber(figures, /p99/i));
  const latency: LatencySummary | undefined =
    p50 !== undefined && p99 !== undefined
      ? { p50Ms: p50, p99Ms: p99, maxMs: inMs(findNumber(figures, /max/i)) ?? p99, count: 0 }
      : undefined;
  const peakRssBytes: Record<string, number> = {};
  for (const [key, v] of Object.entries(figures)) {
    if (typeof v === 'number' && /rss/i.test(key)) peakRssBytes[key] = v;
  }
  return {
    group,
    name: typeof raw.name === 'string' ? raw.name : name,
    description: typeof raw.description === 'string' ? raw.description : '',
    throughput: rate ? { value: rate.value, unit: rate.key } : undefined,
    latency,
    figures,
    ratios: [],
    peakRssBytes,
    skipped: typeof raw.skipped === 'string' ? raw.skipped : undefined,
  };
}

function fromShaped(group: string, raw: Plain): WorkloadResult {
  return {
    figures: {},
    ratios: [],
    peakRssBytes: {},
    description: '',
    ...(raw as Partial<WorkloadResult>),
    group: typeof raw.group === 'string' ? raw.group : group,
    name: String(raw.name),
  };
}

function looksShaped(raw: Plain): boolean {
  return typeof raw.name === 'string' && (isPlain(raw.figures) || isPlain(raw.throughput));
}

function one(group: string, name: string, raw: unknown): WorkloadResult {
  if (isPlain(raw)) return looksShaped(raw) ? fromShaped(group, raw) : fromLoose(group, name, raw);
  return fromLoose(group, name, { value: typeof raw === 'number' ? raw : String(raw) });
}

export function normalizeGroup(group: string, raw: unknown): WorkloadResult[] {
  if (Array.isArray(raw)) return raw.map((r, i) => one(group, `${group} ${i + 1}`, r));
  if (!isPlain(raw)) return [one(group, group, raw)];
  if (Array.isArray(raw.workloads)) return normalizeGroup(group, raw.workloads);
  if (looksShaped(raw) || typeof raw.skipped === 'string') return [one(group, group, raw)];
  const nested = Object.entries(raw).filter(([, v]) => isPlain(v));
  if (nested.length === 0) return [one(group, group, raw)];
  return nested.map(([key, v]) => one(group, `${group} ${key}`, v));
}
