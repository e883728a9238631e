/** Time is injected so tests can age segments and tombstones without sleeping. */
export interface Clock {
  nowMs(): number;
}

export const systemClock: Clock = { nowMs: () => Date.now() };
