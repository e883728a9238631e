/**
 * A measurement too costly to repeat at every ask (bytes on disk: dbstat reads every page of the
 * search store, seconds at 10^7 documents, and the console asks every 5 s): answered from its
 * last result until the time since passes `100 / dutyPercentMax` times what that measurement
 * took, so measuring takes at most that share of the thread's time whatever the store's size. A
 * small store measures in milliseconds and so is measured again at nearly every ask. Another
 * `key` (the stores of another generation, after a rebuild or a drop) is measured at once.
 */
export class DutyBoundMeasure<K, T> {
  private last: { key: K; value: T; atMs: number; tookMs: number } | null = null;

  constructor(
    private readonly dutyPercentMax: number,
    private readonly nowMs: () => number = () => performance.now(),
  ) {
    if (!(dutyPercentMax > 0 && dutyPercentMax <= 100)) {
      throw new Error(`a duty of ${dutyPercentMax}% is not in (0, 100]`);
    }
  }

  get(key: K, measure: () => T): T {
    const atMs = this.nowMs();
    const last = this.last;
    if (last !== null && last.key === key) {
      const restMs = (last.tookMs * 100) / this.dutyPercentMax;
      if (atMs - last.atMs < restMs) return last.value;
    }
    const value = measure();
    this.last = { key, value, atMs, tookMs: this.nowMs() - atMs };
    return value;
  }
}
