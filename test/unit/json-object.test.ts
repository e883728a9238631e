// Proves isJsonObject answers as the Produce handler's old check did, JSON.parse of the strictly
// decoded UTF-8 giving an object, on hand-picked edge cases and on seeded random documents cut,
// flipped and spliced byte by byte, each tested inside a larger buffer so no byte past the end
// is read.
import { describe, expect, it } from 'vitest';
import { isJsonObject } from '../../log-node/kafka/json-object.js';
import { seededRandom, testSeed, type Random } from '../harness/random.js';

const strict = new TextDecoder('utf-8', { fatal: true });

function reference(bytes: Uint8Array): boolean {
  try {
    const document: unknown = JSON.parse(strict.decode(bytes));
    return typeof document === 'object' && document !== null && !Array.isArray(document);
  } catch {
    return false;
  }
}

/** The bytes between random padding, so a read past either end would see other bytes. */
function answer(bytes: Uint8Array, random: Random): boolean {
  const before = random.int(0, 3);
  const padded = Buffer.concat([
    Buffer.from('{"x"'.slice(0, before)),
    bytes,
    Buffer.from('}]" 1'.slice(0, random.int(0, 5))),
  ]);
  return isJsonObject(padded, before, before + bytes.length);
}

function randomValue(random: Random, depth: number): unknown {
  const kind = random.int(0, depth > 3 ? 4 : 6);
  if (kind === 0) return null;
  if (kind === 1) return random.next() < 0.5;
  if (kind === 2) return random.pick([0, -1, 1.5, -2e-7, 123456789, 1e21, 0.1]);
  if (kind === 3 || kind === 4) {
    return random.pick(['', 'a', 'é', '日本', '😀', '"\\/\b\f\n\r\t', '\u0000\u001f', '\ud800']);
  }
  if (kind === 5)
    return Array.from({ length: random.int(0, 3) }, () => randomValue(random, depth + 1));
  return randomObject(random, depth);
}

function randomObject(random: Random, depth: number): Record<string, unknown> {
  return Object.fromEntries(
    Array.from({ length: random.int(0, 3) }, (_, i) => [
      `k${i}${random.pick(['', 'é', ' '])}`,
      randomValue(random, depth + 1),
    ]),
  );
}

const SPICE = Buffer.from('{}[]",:\\-+.eE0123456789 \t\n\rtruefalsnu\u00e9\xff\x80\xc0\xed\xf4');

function mutate(bytes: Buffer, random: Random): Buffer {
  const out = Buffer.from(bytes);
  const at = random.int(0, Math.max(0, out.length - 1));
  switch (random.int(0, 3)) {
    case 0:
      return out.subarray(0, at);
    case 1:
      if (out.length > 0) out[at] = random.int(0, 255);
      return out;
    case 2:
      return Buffer.concat([
        out.subarray(0, at),
        SPICE.subarray(random.int(0, SPICE.length - 1)).subarray(0, 1),
        out.subarray(at),
      ]);
    default:
      return Buffer.concat([out.subarray(0, at), out.subarray(at + 1)]);
  }
}

describe('isJsonObject', () => {
  it('agrees with JSON.parse on edge cases', () => {
    const random = seededRandom(testSeed('json-object edge cases'));
    const cases = [
      '{}',
      ' {} ',
      '\ufeff{}',
      '\ufeff \n{}',
      '{"a":1}',
      '{"a":[1,2,{"b":null}]}',
      '[]',
      '[{}]',
      '1',
      '"{}"',
      'null',
      '',
      ' ',
      '{',
      '}',
      '{"a"}',
      '{"a":}',
      '{"a":1,}',
      '{,}',
      '{"a":1 "b":2}',
      '{"a":01}',
      '{"a":-0}',
      '{"a":-}',
      '{"a":1.}',
      '{"a":.5}',
      '{"a":1e}',
      '{"a":1e+5}',
      '{"a":1E-5}',
      '{"a":tru}',
      '{"a":True}',
      '{"a":"\\u12"}',
      '{"a":"\\u12G4"}',
      '{"a":"\\x"}',
      '{"a":"\\/"}',
      '{"a":"\t"}',
      '{"a":"\u007f"}',
      '{} {}',
      '{}x',
      '{"a":[1,]}',
      '{"a":[,1]}',
      '{"é":"日本"}',
      '{"a":{"b":{"c":{"d":{"e":{"f":{"g":{"h":[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]}}}}}}}}',
      '{"a":"\\ud800"}',
      '{\n\t"a" :\r 1 }',
    ];
    for (const text of cases) {
      const bytes = Buffer.from(text);
      expect(answer(bytes, random), JSON.stringify(text)).toBe(reference(bytes));
    }
    const raw = [
      [0x7b, 0x22, 0xc3, 0x28, 0x22, 0x3a, 0x31, 0x7d], // a lead byte without its continuation
      [0x7b, 0x22, 0xe0, 0x80, 0x80, 0x22, 0x3a, 0x31, 0x7d], // overlong
      [0x7b, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x3a, 0x31, 0x7d], // an encoded surrogate
      [0x7b, 0x22, 0xf4, 0x90, 0x80, 0x80, 0x22, 0x3a, 0x31, 0x7d], // past U+10FFFF
      [0x7b, 0x22, 0xf0, 0x9f, 0x98, 0x80, 0x22, 0x3a, 0x31, 0x7d], // an emoji
      [0x7b, 0x22, 0xc2, 0x22, 0x3a, 0x31, 0x7d], // cut by the quote
      [0xef, 0xbb, 0xbf, 0xef, 0xbb, 0xbf, 0x7b, 0x7d], // two byte order marks
    ];
    for (const bytes of raw.map((b) => Buffer.from(b))) {
      expect(answer(bytes, random), bytes.toString('hex')).toBe(reference(bytes));
    }
    const deep = Buffer.from(`{"a":${'['.repeat(200)}${']'.repeat(200)}}`);
    expect(answer(deep, random)).toBe(true);
  });

  it('agrees with JSON.parse on random documents and their mutations', () => {
    const random = seededRandom(testSeed('json-object random'));
    let accepted = 0;
    for (let n = 0; n < 20_000; n++) {
      // Mostly objects, the documents a producer sends; any value now and then.
      const document = n % 5 === 0 ? randomValue(random, 0) : randomObject(random, 1);
      const text = JSON.stringify(document, null, random.pick([undefined, 1, '\t']));
      let bytes: Buffer = Buffer.from(text === undefined ? 'null' : text);
      for (let m = random.int(0, 2); m > 0; m--) bytes = mutate(bytes, random);
      const expected = reference(bytes);
      if (expected) accepted++;
      expect(answer(bytes, random), bytes.toString('hex')).toBe(expected);
    }
    expect(accepted, 'both outcomes are exercised').toBeGreaterThan(2_000);
    expect(accepted).toBeLessThan(18_000);
  });
});
