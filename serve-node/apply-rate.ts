/** Records applied per second over a sliding window, for status and the replay ETA. */
const WINDOW_MS = 10_000;
const SAMPLES_MAX = 64;

export class ApplyRate {
  private samples: Array<{ atMs: number; total: number }> = [];
  private total = 0;

  record(records: number, nowMs = Date.now()): void {
    this.total += records;
    this.samples.push({ atMs: nowMs, total: this.total });
    while (
      this.samples.length > SAMPLES_MAX ||
      (this.samples.length > 2 && nowMs - this.samples[0].atMs > WINDOW_MS)
    ) {
      this.samples.shift();
    }
  }

  perSecond(nowMs = Date.now()): number {
    const first = this.samples[0];
    if (first === undefined || nowMs - first.atMs > WINDOW_MS * 2) return 0;
    const elapsedMs = Math.max(nowMs - first.atMs, 1);
    return ((this.total - first.total) * 1000) / elapsedMs;
  }
}
