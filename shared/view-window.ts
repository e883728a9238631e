/**
 * A grouping view's event-time window (`"window": {"field", "size", "advance"?, "grace"?}`): its
 * checks, the event time of a source document, and the windows an event time falls in. Windows
 * are aligned on the Unix epoch (UTC): a window of size S and advance A starts at every multiple
 * of A and covers [start, start + S); without `advance` it is tumbling (A = S). S must be a
 * multiple of A, so every event falls in exactly S / A windows.
 */
import { badRequest } from './errors.js';

/** As a client declares it and the views topic stores it. */
export interface WindowDefinition {
  field: string;
  size: string;
  advance?: string;
  grace?: string;
}

export interface ParsedWindow {
  field: string;
  sizeMs: number;
  advanceMs: number;
  graceMs: number;
  /** The definition as given, for the stored definition. */
  definition: WindowDefinition;
}

export interface WindowLimits {
  /** size / advance: the windows one event falls in (each a document to update). */
  windowsPerEventMax: number;
  /** The longest window, ms. */
  windowSizeMsMax: number;
}

export const WINDOW_LIMITS_DEFAULT: Readonly<WindowLimits> = Object.freeze({
  windowsPerEventMax: 64,
  windowSizeMsMax: 366 * 86_400_000,
});

/** Event times are read in years 0001 to 9999, where RFC 3339 and its text order hold. */
const EVENT_TIME_MIN_MS = -62_135_596_800_000;
const EVENT_TIME_MAX_MS = 253_402_300_799_999;

/** The output fields a windowed grouping adds; no groupBy field nor aggregate may take them. */
export const WINDOW_FIELDS: readonly string[] = ['windowStart', 'windowEnd'];

const WINDOW_KEYS = new Set(['field', 'size', 'advance', 'grace']);
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION = /^([0-9]{1,15})(ms|s|m|h|d)$/;
/** RFC 3339 with a time zone; Date.parse then reads it (fractions past ms are cut by it). */
const RFC_3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

const invalidWindow = (message: string) => badRequest('invalid_window', message);

/** A duration as `<integer><ms|s|m|h|d>`, in ms; null when the text is not one. */
export function durationMs(text: unknown): number | null {
  if (typeof text !== 'string') return null;
  const match = DURATION.exec(text);
  if (match === null) return null;
  const ms = Number(match[1]) * UNIT_MS[match[2]];
  return Number.isSafeInteger(ms) ? ms : null;
}

/** Checks a `window`; throws 400 `invalid_window` naming what is wrong. */
export function parseWindow(
  value: unknown,
  limits: WindowLimits = WINDOW_LIMITS_DEFAULT,
): ParsedWindow {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalidWindow('`window` is an object: {field, size, advance?, grace?}');
  }
  const given = value as Record<string, unknown>;
  for (const key of Object.keys(given)) {
    if (!WINDOW_KEYS.has(key)) {
      throw invalidWindow(`unknown field ${JSON.stringify(key.slice(0, 80))} in \`window\``);
    }
  }
  const { field, size, advance, grace } = given;
  if (typeof field !== 'string' || field.length === 0 || field.includes('\0')) {
    throw invalidWindow('`window.field` names the event-time field: epoch ms or RFC 3339');
  }
  const sizeMs = durationMs(size);
  if (sizeMs === null || sizeMs === 0) {
    throw invalidWindow('`window.size` is a positive duration: 30s, 15m, 1h, 1d, 500ms');
  }
  if (sizeMs > limits.windowSizeMsMax) {
    throw invalidWindow(`\`window.size\` is over ${limits.windowSizeMsMax} ms`);
  }
  const advanceMs = advance === undefined ? sizeMs : durationMs(advance);
  if (advanceMs === null || advanceMs === 0) {
    throw invalidWindow('`window.advance` is a positive duration: 30s, 15m, 1h, 1d, 500ms');
  }
  if (advanceMs > sizeMs) throw invalidWindow('`window.advance` is larger than `window.size`');
  if (sizeMs % advanceMs !== 0) {
    throw invalidWindow('`window.size` must be a multiple of `window.advance`');
  }
  if (sizeMs / advanceMs > limits.windowsPerEventMax) {
    throw invalidWindow(
      `\`window.size\` / \`window.advance\` is over ${limits.windowsPerEventMax} windows an event`,
    );
  }
  const graceMs = grace === undefined ? 0 : durationMs(grace);
  if (graceMs === null) {
    throw invalidWindow('`window.grace` is a duration: 0s, 5m, 1h');
  }
  const definition: WindowDefinition = { field, size: size as string };
  if (advance !== undefined) definition.advance = advance as string;
  if (grace !== undefined) definition.grace = grace as string;
  return { field, sizeMs, advanceMs, graceMs, definition };
}

/**
 * A document's event time in epoch ms: a finite number (epoch ms, floored) or an RFC 3339
 * string, in years 0001 to 9999; null otherwise (absent, another type, out of range).
 */
export function eventTimeMs(doc: Record<string, unknown>, field: string): number | null {
  const value = doc[field];
  let ms: number;
  if (typeof value === 'number') ms = Math.floor(value);
  else if (typeof value === 'string' && RFC_3339.test(value)) ms = Date.parse(value);
  else return null;
  return ms >= EVENT_TIME_MIN_MS && ms <= EVENT_TIME_MAX_MS ? ms : null;
}

/** The starts of the windows an event time falls in, oldest first. */
export function windowStarts(window: ParsedWindow, timeMs: number): number[] {
  const last = Math.floor(timeMs / window.advanceMs) * window.advanceMs;
  const starts: number[] = [];
  for (
    let start = last - window.sizeMs + window.advanceMs;
    start <= last;
    start += window.advanceMs
  ) {
    starts.push(start);
  }
  return starts;
}

/** A window bound as the output writes it: RFC 3339 in UTC with milliseconds. */
export function windowBound(ms: number): string {
  return new Date(ms).toISOString();
}
