/** Number formatting shared by the terminal table and the chart. */

export function formatRate(value: number): string {
  if (value >= 100) return Math.round(value).toLocaleString('en-US');
  return value.toPrecision(3);
}

export function formatMs(value: number): string {
  return value >= 10 ? value.toFixed(1) : value.toFixed(2);
}

export function formatBytes(bytes: number): string {
  if (bytes <= 0) return '-';
  const mib = bytes / (1024 * 1024);
  return mib >= 1024 ? `${(mib / 1024).toFixed(2)} GiB` : `${mib.toFixed(0)} MiB`;
}

export function formatRatio(value: number): string {
  return value >= 10 ? `${value.toFixed(0)}x` : `${value.toFixed(2)}x`;
}
