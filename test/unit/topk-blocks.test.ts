// Proves a top-k block gives back exactly the postings it was given, in order, for any lengths,
// partitions (to 1023) and offsets (to the largest a row holds), in a few bytes a posting; and
// that its tie key orders rows as the search orders equal scores (partition, then offset).
import { describe, expect, it } from 'vitest';
import { rowOf, ROW_PARTITIONS } from '../../serve-node/fts-table.js';
import {
  BLOCK_POSTINGS_MAX,
  comparePostings,
  decodeBlock,
  encodeBlock,
  splitBlocks,
  tieOf,
  type Posting,
} from '../../serve-node/topk-blocks.js';
import { seededRandom, testSeed } from '../harness/index.js';

/** The largest offset a row holds (rowOf asserts below 2^53). */
const OFFSET_MAX = Math.floor((Number.MAX_SAFE_INTEGER - (ROW_PARTITIONS - 1)) / ROW_PARTITIONS);

function sortedPostings(random: ReturnType<typeof seededRandom>, count: number): Posting[] {
  const offsetMax = random.pick([100, 100_000, OFFSET_MAX]);
  const byRow = new Map<number, Posting>();
  while (byRow.size < count) {
    const row = rowOf(
      random.int(0, random.pick([0, 7, ROW_PARTITIONS - 1])),
      random.int(0, offsetMax),
    );
    byRow.set(row, { len: random.int(1, random.pick([3, 200, 100_000])), row });
  }
  return [...byRow.values()].sort(comparePostings);
}

describe('top-k blocks', () => {
  it('decode to the postings encoded, and tie keys order rows as equal scores do', () => {
    const seed = testSeed('topk-blocks');
    const random = seededRandom(seed);
    for (let round = 0; round < 2_000; round++) {
      const postings = sortedPostings(random, random.int(1, BLOCK_POSTINGS_MAX));
      const bytes = encodeBlock(postings);
      expect(decodeBlock(bytes), `seed ${seed} round ${round}`).toEqual(postings);
      for (let i = 1; i < postings.length; i++) {
        const [a, b] = [postings[i - 1], postings[i]];
        if (a.len === b.len) expect(tieOf(a.row)).toBeLessThan(tieOf(b.row));
      }
    }
    expect(tieOf(rowOf(ROW_PARTITIONS - 1, OFFSET_MAX))).toBeLessThanOrEqual(
      Number.MAX_SAFE_INTEGER,
    );
  });

  it('cost a byte or two a posting that follows the last in its partition and length', () => {
    const postings = Array.from({ length: BLOCK_POSTINGS_MAX }, (_, i) => ({
      len: 105,
      row: rowOf(3, 12_000 + i * 3),
    }));
    expect(encodeBlock(postings).length).toBeLessThanOrEqual(2 * BLOCK_POSTINGS_MAX + 4);
  });

  it('split a run into blocks of at most the maximum, in order, none empty', () => {
    const random = seededRandom(testSeed('topk-blocks-split'));
    for (const count of [
      1,
      BLOCK_POSTINGS_MAX,
      BLOCK_POSTINGS_MAX + 1,
      5 * BLOCK_POSTINGS_MAX - 3,
    ]) {
      const postings = sortedPostings(random, count);
      const blocks = splitBlocks(postings);
      expect(blocks.flat()).toEqual(postings);
      for (const block of blocks) {
        expect(block.length).toBeGreaterThan(0);
        expect(block.length).toBeLessThanOrEqual(BLOCK_POSTINGS_MAX);
      }
    }
  });
});
