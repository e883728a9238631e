// Proves the bulk parser (as the gateway runs it, in slices) refuses a body over bulkRecordsMax from a count, before parsing it whole
// (a malformed element past the limit is never reached), that the count is exact for any valid
// array, that every other body gets the answer a plain JSON.parse gives, and that the content type
// is read case-insensitively and without its parameters.
import { describe, expect, it } from 'vitest';
import { parseBulkInSlices } from '../../gateway/bulk.js';
import { DEFAULT_LIMITS } from '../../gateway/config.js';
import { TailbaseError } from '../../shared/errors.js';
import { seededRandom, testSeed, type Random } from '../harness/random.js';

const JSON_TYPE = 'application/json';
const NDJSON_TYPE = 'application/x-ndjson';
const record = (key: string) => JSON.stringify({ key, value: { n: 1 } });

function parse(text: string, type: string | undefined, bulkRecordsMax: number) {
  return parseBulkInSlices(text, type, { ...DEFAULT_LIMITS, bulkRecordsMax }, 0);
}

async function keysOf(text: string, type: string | undefined, bulkRecordsMax: number) {
  return (await parse(text, type, bulkRecordsMax)).map((r) => r.key);
}

/** Characters the element count must see through when they sit inside strings. */
const AWKWARD = ['[', ']', '{', '}', ',', '"', '\\', ':', ' ', '\n', 'a', 'é', '\u2028', '😀'];

function randomString(random: Random): string {
  return Array.from({ length: random.int(1, 6) }, () => random.pick(AWKWARD)).join('');
}

function randomValue(random: Random, depth: number): unknown {
  const kind = random.int(0, depth > 4 ? 2 : 4);
  if (kind === 0) return randomString(random);
  if (kind === 1) return random.pick([0, -1.5, 1e300, true, false, null]);
  if (kind === 2) return {};
  const length = random.int(0, 4);
  if (kind === 3) return Array.from({ length }, () => randomValue(random, depth + 1));
  const members = Array.from({ length }, () => [
    randomString(random),
    randomValue(random, depth + 1),
  ]);
  return Object.fromEntries(members);
}

async function refusal(run: () => Promise<unknown>): Promise<TailbaseError> {
  try {
    await run();
  } catch (error) {
    if (error instanceof TailbaseError) return error;
    throw error;
  }
  throw new Error('expected the bulk to be refused');
}

const tooMany = (max: number, actual: number) => ({
  status: 413,
  code: 'too_many_records',
  details: { limit: 'bulkRecordsMax', max, actual },
});

describe('a JSON array bulk over bulkRecordsMax', () => {
  it('is refused on its count, before a malformed element past the limit is parsed', async () => {
    const text = `[${record('a')},${record('b')},${record('c')},{"key":nope}]`;
    expect(await refusal(() => parse(text, JSON_TYPE, 3))).toMatchObject(tooMany(3, 4));
    expect(await refusal(() => parse(text, JSON_TYPE, 4))).toMatchObject({ code: 'invalid_json' });
  });

  it('reports the whole count, as a full parse would', async () => {
    const text = `[${'{},'.repeat(99_999)}{}]`;
    expect(await refusal(() => parse(text, JSON_TYPE, 10))).toMatchObject(tooMany(10, 100_000));
  });

  it('counts elements whose strings hold brackets, braces, commas, quotes and backslashes', async () => {
    const awkward = [
      '[',
      ']',
      '{',
      '}',
      ',',
      '"',
      '\\',
      '\\"',
      '\\\\',
      '",[',
      'a\\",{"b',
      '\\\\",',
    ];
    const text = JSON.stringify(awkward.map((key) => ({ key, value: { key, list: [key, ','] } })));
    expect(await refusal(() => parse(text, JSON_TYPE, awkward.length - 1))).toMatchObject(
      tooMany(awkward.length - 1, awkward.length),
    );
    expect(await keysOf(text, JSON_TYPE, awkward.length)).toEqual(awkward);
  });

  it('counts exactly what JSON.parse finds in random arrays of awkward records (seeded)', async () => {
    const seed = testSeed('bulk array count');
    const random = seededRandom(seed);
    for (let round = 0; round < 300; round++) {
      const keys = Array.from({ length: random.int(1, 20) }, () => randomString(random));
      const bulk = keys.map((key) => ({ key, value: { v: randomValue(random, 1) } }));
      const text = JSON.stringify(bulk, null, random.pick([0, 1, '\t', ' \r\n']));
      const where = `seed ${seed} round ${round}`;
      expect(await keysOf(text, JSON_TYPE, keys.length), where).toEqual(keys);
      expect(await refusal(() => parse(text, JSON_TYPE, keys.length - 1)), where).toMatchObject(
        tooMany(keys.length - 1, keys.length),
      );
    }
  });

  it('counts hand-written escapes: \\" in a string, \\\\ just before its closing quote', async () => {
    const text = '[{"key":"\\"]","value":{}}, {"key":"\\\\","value":{"a":"\\\\\\"["}}]';
    expect(await refusal(() => parse(text, JSON_TYPE, 1))).toMatchObject(tooMany(1, 2));
    expect(await keysOf(text, JSON_TYPE, 2)).toEqual(['"]', '\\']);
  });

  it('counts a nested array or object as one element', async () => {
    const text = '[[1,[2,3],{"a":[4,5]}], [], {"b":{"c":[6,7,8]}}]';
    expect(await refusal(() => parse(text, JSON_TYPE, 2))).toMatchObject(tooMany(2, 3));
    expect(await refusal(() => parse(text, JSON_TYPE, 3))).toMatchObject({
      code: 'invalid_record',
      details: { index: 0 },
    });
  });

  it('counts across JSON whitespace between elements and around the array', async () => {
    const text = ` \r\n\t[ \n${record('a')} ,\r\n\t${record('b')}\n,${record('c')} ] \n`;
    expect(await refusal(() => parse(text, JSON_TYPE, 2))).toMatchObject(tooMany(2, 3));
    expect(await parse(text, JSON_TYPE, 3)).toHaveLength(3);
    expect(await parse(text, undefined, 3)).toHaveLength(3);
  });
});

describe('a JSON array bulk within bulkRecordsMax', () => {
  it('gets the same invalid_json, with JSON.parse’s own message, as before', async () => {
    for (const text of ['[{"key":"a"', '[1,,2]', '[1,2,]', '[1] [2]', '[1}', '["a\\"]']) {
      let message = '';
      try {
        JSON.parse(text);
      } catch (cause) {
        message = (cause as Error).message;
      }
      expect(await refusal(() => parse(text, JSON_TYPE, 5))).toMatchObject({
        status: 400,
        code: 'invalid_json',
        message: `bulk body is not valid JSON: ${message}`,
      });
    }
  });

  it('leaves a byte order mark or a non-JSON space to JSON.parse, which refuses it', async () => {
    for (const text of [`\uFEFF[${record('a')}]`, `\u00A0[${record('a')}]`]) {
      expect(await refusal(() => parse(text, JSON_TYPE, 1))).toMatchObject({
        code: 'invalid_json',
      });
      expect(await refusal(() => parse(text, undefined, 1))).toMatchObject({
        code: 'invalid_json',
      });
    }
  });

  it('answers empty_bulk for an empty array and invalid_bulk for a string holding commas', async () => {
    expect(await refusal(() => parse('[ \n ]', JSON_TYPE, 1))).toMatchObject({
      code: 'empty_bulk',
    });
    expect(await refusal(() => parse('"[1,2,3]"', JSON_TYPE, 1))).toMatchObject({
      code: 'invalid_bulk',
    });
  });
});

describe('an NDJSON bulk', () => {
  it('is refused at the line past bulkRecordsMax, before a malformed line there is parsed', async () => {
    const text = `${record('a')}\n${record('b')}\n{"key":nope}\n${record('c')}\n`;
    expect(await refusal(() => parse(text, NDJSON_TYPE, 2))).toMatchObject(tooMany(2, 3));
    expect(await refusal(() => parse(text, NDJSON_TYPE, 3))).toMatchObject({
      code: 'invalid_json',
      details: { line: 3 },
    });
  });

  it('skips blank, whitespace-only and CRLF lines, numbering lines as the body does', async () => {
    const text = `\n \t\r\n\uFEFF${record('a')}\r\n\u00A0\n  ${record('b')}  \n\n{oops\n`;
    expect(await refusal(() => parse(text, NDJSON_TYPE, 5))).toMatchObject({
      code: 'invalid_json',
      details: { line: 7 },
    });
    const good = text.replace('{oops\n', record('c'));
    expect(await keysOf(good, NDJSON_TYPE, 3)).toEqual(['a', 'b', 'c']);
    expect(await refusal(() => parse(good, NDJSON_TYPE, 2))).toMatchObject(tooMany(2, 3));
  });

  it('answers empty_bulk for a body of only newlines', async () => {
    expect(await refusal(() => parse('\n'.repeat(1 << 20), NDJSON_TYPE, 10))).toMatchObject({
      status: 400,
      code: 'empty_bulk',
    });
  });
});

describe('the bulk format', () => {
  it('reads application/json in any case, and with parameters, as a JSON array', async () => {
    const object = record('a');
    for (const type of [
      'application/json',
      'APPLICATION/JSON',
      'Application/Json; charset=UTF-8',
    ]) {
      expect(await refusal(() => parse(object, type, 5))).toMatchObject({ code: 'invalid_bulk' });
    }
  });

  it('reads application/x-ndjson in any case, and with parameters, as lines', async () => {
    const array = `[${record('a')}]`;
    for (const type of [
      NDJSON_TYPE,
      'APPLICATION/X-NDJSON',
      'Application/X-NDJSON ; charset=utf-8',
    ]) {
      expect(await refusal(() => parse(array, type, 5))).toMatchObject({
        code: 'invalid_record',
        details: { index: 0 },
      });
    }
  });

  it('looks only at the media type, not at its parameters', async () => {
    expect(await keysOf(record('a'), 'text/plain; profile=json', 5)).toEqual(['a']);
    expect(await parse(`[${record('a')}]`, 'text/plain; charset=utf-8', 5)).toHaveLength(1);
  });
});
