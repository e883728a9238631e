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
