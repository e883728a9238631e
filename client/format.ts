/** Human output: aligned tables, one-line JSON summaries cut to fit, durations and rates. */

export type Cell = string | number | boolean | null | undefined;

const cellText = (cell: Cell) => (cell === null || cell === undefined ? '-' : String(cell));

/**
 * Columns padded to their widest cell, two spaces apart; the last column is not padded, so a
 * long value at the end of a row does not push trailing blanks.
 */
export function formatTable(headers: readonly string[], rows: readonly Cell[][]): string {
  const texts = [headers.map(String), ...rows.map((row) => row.map(cellText))];
  // A loop, not Math.max(...rows): spreading 100k+ rows into arguments overflows the stack.
  const widths = headers.map((_, column) =>
    texts.reduce((widest, row) => Math.max(widest, [...(row[column] ?? '')].length), 0),
  );
  return texts
    .map((row) =>
      row
        .map((text, column) =>
          column === row.length - 1 ? text : text + ' '.repeat(widths[column] - [...text].length),
        )
        .join('  ')
        .trimEnd(),
    )
    .join('\n')
    .concat('\n');
}

const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

/** A byte count in binary units, three significant digits (`1.21 MiB`); null stays null. */
export function formatBytes(bytes: number | null): string | null {
  if (bytes === null) return null;
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < BYTE_UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  const digits = unit === 0 ? String(value) : value.toPrecision(3);
  return `${digits} ${BYTE_UNITS[unit]}`;
}

/** Compact JSON on one line, cut to charsMax characters with an ellipsis. */
export function summarizeJson(value: unknown, charsMax: number): string {
  const text = JSON.stringify(value) ?? 'undefined';
  const chars = [...text];
  if (chars.length <= charsMax) return text;
  return chars.slice(0, Math.max(charsMax - 1, 0)).join('') + '…';
}

/** Room left for a value column after the other columns, in a terminal of `columns`. */
export function valueWidth(columns: number | undefined, used: number): number {
  const VALUE_CHARS_MIN = 20;
  const COLUMNS_DEFAULT = 120;
  return Math.max((columns ?? COLUMNS_DEFAULT) - used, VALUE_CHARS_MIN);
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const seconds = ms / 1000;
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  const minutes = Math.floor(seconds / 60);
  return `${minutes} min ${Math.round(seconds - minutes * 60)} s`;
}

export function formatRate(count: number, ms: number): string {
  return ms <= 0 ? '-' : `${Math.round((count * 1000) / ms)}`;
}

/** `0-3,6` for partitions 0, 1, 2, 3 and 6: the form operators write them in. */
export function formatPartitionList(partitions: readonly number[]): string {
  const sorted = [...new Set(partitions)].sort((a, b) => a - b);
  const ranges: string[] = [];
  for (let i = 0; i < sorted.length;) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j] + 1) j++;
    ranges.push(i === j ? `${sorted[i]}` : `${sorted[i]}-${sorted[j]}`);
    i = j + 1;
  }
  return ranges.join(',');
}

/** How the gateway marks matches in a search hit's `highlights` (with `highlight=true`). */
export const MARK_OPEN = '<mark>';
export const MARK_CLOSE = '</mark>';

export interface MarkedPart {
  text: string;
  match: boolean;
}

/** A highlighted field's text in parts, the matches flagged; an unclosed mark runs to the end. */
export function markedParts(text: string): MarkedPart[] {
  const parts: MarkedPart[] = [];
  let rest = text;
  while (rest !== '') {
    const open = rest.indexOf(MARK_OPEN);
    if (open === -1) break;
    if (open > 0) parts.push({ text: rest.slice(0, open), match: false });
    rest = rest.slice(open + MARK_OPEN.length);
    const close = rest.indexOf(MARK_CLOSE);
    const end = close === -1 ? rest.length : close;
    if (end > 0) parts.push({ text: rest.slice(0, end), match: true });
    rest = close === -1 ? '' : rest.slice(close + MARK_CLOSE.length);
  }
  if (rest !== '') parts.push({ text: rest, match: false });
  return parts;
}

/** Bold yellow on a terminal; `*word*` where colour cannot show (a pipe, a file, NO_COLOR). */
const MATCH_STYLE = { colour: ['\x1b[1;33m', '\x1b[22;39m'], plain: ['*', '*'] } as const;

/**
 * A hit's highlights on one line, `field: text with matches` joined by ` · `, cut to charsMax
 * visible characters (the escapes of colour do not count, and are never cut in half).
 */
export function formatHighlights(
  highlights: Record<string, string>,
  charsMax: number,
  colour: boolean,
): string {
  const [open, close] = colour ? MATCH_STYLE.colour : MATCH_STYLE.plain;
  const parts: MarkedPart[] = [];
  Object.entries(highlights).forEach(([field, text], index) => {
    parts.push({ text: `${index === 0 ? '' : ' · '}${field}: `, match: false });
    for (const part of markedParts(text)) {
      parts.push({ text: part.text.replace(/\s+/g, ' '), match: part.match });
    }
  });
  const marks = colour ? 0 : open.length + close.length;
  const visible = (part: MarkedPart) => [...part.text].length + (part.match ? marks : 0);
  const whole = parts.reduce((sum, part) => sum + visible(part), 0) <= charsMax;
  // A cut line keeps one character for its ellipsis.
  let room = whole ? charsMax : Math.max(charsMax - 1, 0);
  let line = '';
  for (const part of parts) {
    const fits = visible(part) <= room;
    const kept = fits
      ? part.text
      : [...part.text].slice(0, Math.max(room - (part.match ? marks : 0), 0)).join('');
    if (kept !== '') line += part.match ? `${open}${kept}${close}` : kept;
    if (!fits) return `${line}…`;
    room -= visible(part);
  }
  return line;
}
