// Proves the read buffer pool lends a buffer to one holder at a time: a buffer given back is lent
// again, one given back twice is lent once, bytes it never lent (or small ones) are never taken
// in, and what it keeps idle stays within idleBytesMax.
import { describe, expect, it } from 'vitest';
import { POOLED_BYTES_MIN, ReadBuffers } from '../../log-node/read-buffers.js';

describe('ReadBuffers', () => {
  it('lends a given-back buffer again, once, and keeps within idleBytesMax', () => {
    const pool = new ReadBuffers(4 * POOLED_BYTES_MIN);
    const first = pool.take(POOLED_BYTES_MIN + 10);
    expect(first.length).toBeGreaterThanOrEqual(POOLED_BYTES_MIN + 10);
    pool.giveBack(first.subarray(5, 50));
    pool.giveBack(first);
    expect(pool.idleBytesNow).toBe(first.length);
    const again = pool.take(POOLED_BYTES_MIN + 10);
    expect(again.buffer).toBe(first.buffer);
    // Given back twice before: lent once only, so the next take is new memory.
    expect(pool.take(POOLED_BYTES_MIN + 10).buffer).not.toBe(first.buffer);
    expect(pool.idleBytesNow).toBe(0);

    pool.giveBack(Buffer.allocUnsafeSlow(POOLED_BYTES_MIN * 2));
    const small = pool.take(100);
    pool.giveBack(small);
    expect(pool.idleBytesNow, 'bytes it did not lend are not taken in').toBe(0);

    const lent = Array.from({ length: 6 }, () => pool.take(POOLED_BYTES_MIN));
    for (const buffer of lent) pool.giveBack(buffer);
    expect(pool.idleBytesNow).toBe(4 * POOLED_BYTES_MIN);
  });

  it('lends nothing from the pool when idleBytesMax is 0', () => {
    const pool = new ReadBuffers(0);
    const buffer = pool.take(POOLED_BYTES_MIN * 2);
    pool.giveBack(buffer);
    expect(pool.idleBytesNow).toBe(0);
    expect(pool.take(POOLED_BYTES_MIN * 2).buffer).not.toBe(buffer.buffer);
  });
});
