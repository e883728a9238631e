// Proves NDJSON handling on the client: lines survive any split of the byte stream (multi-byte
// characters, CRLF, no final newline), and bulk chunks keep every non-blank line once, in order,
// with its source line number, within the line and byte limits.
import { describe, expect, it } from 'vitest';
import { chunkLines, type Line, splitLines } from '../../client/ndjson.js';
import { seededRandom, testSeed } from '../harness/random.js';

async function collect<T>(source: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of source) out.push(item);
  return out;
}

async function* pieces(bytes: Buffer, cuts: number[]): AsyncGenerator<Uint8Array> {
  let at = 0;
  for (const cut of [...cuts, bytes.length]) {
    yield bytes.subarray(at, cut);
    at = cut;
  }
}

describe('splitLines', () => {
  it('splits on \\n and \\r\\n wherever the chunks are cut, even inside a character', async () => {
    const text = 'é1\r\n{"k":"ü"}\n\nlast';
    const bytes = Buffer.from(text);
    for (let cut = 0; cut <= bytes.length; cut++) {
      const lines = await collect(splitLines(pieces(bytes, [cut]), 100));
      expect(lines.map((l) => l.text)).toEqual(['é1', '{"k":"ü"}', '', 'last']);
      expect(lines.map((l) => l.number)).toEqual([1, 2, 3, 4]);
    }
  });

  it('refuses a line longer than the bound', async () => {
    await expect(
      collect(splitLines(pieces(Buffer.from('x'.repeat(50)), [10, 20]), 15)),
    ).rejects.toThrow(/line 1 is longer than 15/);
  });
});

describe('chunkLines', () => {
  const asLines = (texts: string[]) =>
    (async function* () {
      let number = 0;
      for (const text of texts)
        yield { number: ++number, text, bytes: Buffer.byteLength(text) + 1 } as Line;
    })();

  it('cuts by lines and by bytes; a line larger than bytesMax goes alone; blank lines are skipped', async () => {
    const chunks = await collect(
      chunkLines(asLines(['a', '', 'bb', 'ccc', 'x'.repeat(30), 'd', 'e', 'f']), {
        linesMax: 3,
        bytesMax: 9,
      }),
    );
    expect(chunks.map((c) => c.body)).toEqual(['a\nbb\nccc', 'x'.repeat(30), 'd\ne\nf']);
    expect(chunks.map((c) => c.lineNumbers)).toEqual([[1, 3, 4], [5], [6, 7, 8]]);
    expect(chunks.reduce((sum, c) => sum + c.sourceBytes, 0)).toBe(2 + 1 + 3 + 4 + 31 + 6);
  });

  it('keeps every non-blank line once, in order, within limits (seeded)', async () => {
    const random = seededRandom(testSeed('chunkLines'));
    for (let round = 0; round < 50; round++) {
      const texts = Array.from({ length: random.int(0, 40) }, () =>
        random.next() < 0.2 ? '' : 'y'.repeat(random.int(1, 12)),
      );
      const limits = { linesMax: random.int(1, 6), bytesMax: random.int(1, 30) };
      const chunks = await collect(chunkLines(asLines(texts), limits));
      const sent = chunks.flatMap((c) => (c.body === '' ? [] : c.body.split('\n')));
      expect(sent).toEqual(texts.filter((t) => t !== ''));
      expect(chunks.flatMap((c) => c.lineNumbers)).toEqual(
        texts.flatMap((t, i) => (t === '' ? [] : [i + 1])),
      );
      for (const chunk of chunks) {
        expect(chunk.lineNumbers.length).toBeLessThanOrEqual(limits.linesMax);
        if (chunk.lineNumbers.length > 1) {
          expect(Buffer.byteLength(chunk.body) + 1).toBeLessThanOrEqual(limits.bytesMax);
        }
      }
    }
  });
});
