// Proves crc32c() is CRC-32C (Castagnoli), not CRC-32 (IEEE): it matches the published vectors.
import { describe, expect, it } from 'vitest';
import { crc32c } from '../../shared/crc32c.js';

const incrementing = Uint8Array.from({ length: 32 }, (_, i) => i);
const decrementing = Uint8Array.from({ length: 32 }, (_, i) => 31 - i);

// RFC 3720 (iSCSI), appendix B.4, plus the customary check value of the CRC catalogue.
const vectors: Array<[string, Uint8Array, number]> = [
  ['32 bytes of zeros', new Uint8Array(32), 0x8a9136aa],
  ['32 bytes of 0xff', new Uint8Array(32).fill(0xff), 0x62a8ab43],
  ['32 incrementing bytes 0..31', incrementing, 0x46dd794e],
  ['32 decrementing bytes 31..0', decrementing, 0x113fdb5c],
  ['"123456789"', new TextEncoder().encode('123456789'), 0xe3069283],
];

describe('crc32c', () => {
  it.each(vectors)('matches the published vector for %s', (_, bytes, expected) => {
    expect(crc32c(bytes)).toBe(expected);
  });

  it('returns an unsigned 32-bit value, so it compares equal to a header read with readUInt32BE', () => {
    const crc = crc32c(new Uint8Array(32));
    expect(crc).toBeGreaterThan(0x7fffffff);
    const header = Buffer.alloc(4);
    header.writeUInt32BE(crc);
    expect(header.readUInt32BE(0)).toBe(crc);
  });

  it('checksums only the bytes of a view, not the rest of its underlying buffer', () => {
    const backing = new Uint8Array(64).fill(0xee);
    backing.set(incrementing, 7);
    expect(crc32c(backing.subarray(7, 39))).toBe(0x46dd794e);
    const buffer = Buffer.from(backing.buffer, 7, 32);
    expect(crc32c(buffer)).toBe(0x46dd794e);
  });

  it('gives the initial value 0 for no bytes', () => {
    expect(crc32c(new Uint8Array(0))).toBe(0);
  });
});
