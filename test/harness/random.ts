/**
 * Seeded randomness for tests: one seed a test, printed so a failure replays with
 * TAILBASE_TEST_SEED=<seed>.
 */
export interface Random {
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [min, max], both included. */
  int(min: number, max: number): number;
  pick<T>(items: readonly T[]): T;
  bytes(length: number): Buffer;
}

/** The seed from TAILBASE_TEST_SEED, or a fresh one; printed with the test's name either way. */
export function testSeed(name: string): number {
  const fromEnv = process.env.TAILBASE_TEST_SEED;
  const seed =
    fromEnv !== undefined && fromEnv !== ''
      ? Number(fromEnv)
      : Math.floor(Math.random() * 0x7fff_ffff);
  if (!Number.isSafeInteger(seed)) throw new Error(`TAILBASE_TEST_SEED must be an integer`);
  console.info(`${name}: seed ${seed} (replay with TAILBASE_TEST_SEED=${seed})`);
  return seed;
}

/** mulberry32: small, fast, and good enough to drive test inputs. */
export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 0x1_0000_0000;
  };
  const int = (min: number, max: number) => min + Math.floor(next() * (max - min + 1));
  return {
    next,
    int,
    pick: (items) => items[int(0, items.length - 1)],
    bytes: (length) => Buffer.from(Array.from({ length }, () => int(0, 255))),
  };
}
