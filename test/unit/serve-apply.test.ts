// Proves the apply path: log batches become LMDB documents and FTS5 rows with checkpoints in the
// same transactions, re-applying changes nothing, and settings records re-index a collection.
import { DEFAULT_LIMITS as SERVE_LIMITS } from '../../serve-node/config.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { encodeBatch, type LogRecord } from '../../shared/batch-codec.js';
import { parseQuery } from '../../serve-node/fts-query.js';
import { prepareRecord } from '../../serve-node/prepared-record.js';
import { Replica } from '../../serve-node/replica.js';
import { StepView } from '../../serve-node/step-view.js';

const TOTAL_EXACT_MAX = SERVE_LIMITS.searchTotalExactMax;

const limits = { queryBytesMax: 1024, queryTermsMax: 32 };
const doc = (collection: string, key: string, value: unknown): LogRecord => ({
  collection,
  key,
  value: value === null ? null : Buffer.from(JSON.stringify(value)),
  timestampMs: 1_700_000_000_000,
});

let dir: string;
let replica: Replica;
let nextOffset = 0;

/** Appends records as one batch at the next offset, as the log would, and applies it. */
async function apply(records: LogRecord[], partition = 0): Promise<Buffer> {
  const batch = encodeBatch(records, { baseOffset: nextOffset });
  replica.applyMany([{ partition, fromOffset: nextOffset, batches: batch }]);
  nextOffset += records.length;
  return batch;
}

const search = (q: string, partitions = [0]) =>
  replica.search
    .search('docs', partitions, parseQuery(q, limits), 20, TOTAL_EXACT_MAX)
    .matches.map((m) => m.key);

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'serve-apply-'));
  replica = new Replica(dir);
  nextOffset = 0;
});

afterEach(async () => {
  await replica.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('Replica.apply', () => {
  it('stores the last write of each key with its offset, deletes on tombstones', async () => {
    await apply([doc('docs', 'a', { t: 'one' }), doc('docs', 'b', { t: 'two' })]);
    await apply([doc('docs', 'a', { t: 'three' }), doc('docs', 'b', null)]);
    expect(replica.docs.get('docs', 'a')).toEqual({
      key: 'a',
      json: '{"t":"three"}',
      offset: 2,
      partition: 0,
    });
    expect(replica.docs.get('docs', 'b')).toBeUndefined();
    expect(replica.applied(0)).toBe(4);
    expect(search('three')).toEqual(['a']);
    expect(search('one')).toEqual([]);
    expect(search('two')).toEqual([]);
  });

  it('re-applying a batch the stores hold changes nothing', async () => {
    const first = await apply([doc('docs', 'a', { t: 'alpha' })]);
    await apply([doc('docs', 'a', { t: 'beta' })]);
    replica.applyMany([{ partition: 0, fromOffset: 0, batches: first }]);
    expect(replica.docs.get('docs', 'a')?.json).toBe('{"t":"beta"}');
    expect(search('alpha')).toEqual([]);
    expect(replica.applied(0)).toBe(2);
  });

  it('LMDB behind the search store (a crash between the commits) catches up to the same state', async () => {
    const records = [doc('docs', 'a', { t: 'gamma' }), doc('docs', 'b', { t: 'delta' })];
    const batch = encodeBatch(records);
    // The search store commits first; a crash before LMDB's commit leaves LMDB behind.
    replica.search.applyMany(
      [
        {
          partition: 0,
          records: records.map((r, offset) => prepareRecord({ ...r, offset })),
          nextOffset: 2,
        },
      ],
      () => new StepView(replica.docs),
    );
    expect(replica.readFrom(0)).toBe(null);
    expect(replica.diverged(0)).toBe(true);
    replica.applyMany([{ partition: 0, fromOffset: 0, batches: batch }]);
    expect(replica.docs.applied(0)).toBe(2);
    expect(replica.search.applied(0)).toBe(2);
    expect(replica.docs.get('docs', 'b')?.json).toBe('{"t":"delta"}');
    expect(search('gamma OR delta').sort()).toEqual(['a', 'b']);
  });

  it('scores after updates and deletes equal the scores of the final documents indexed fresh', async () => {
    const history = [
      [doc('docs', 'a', { t: 'alpha beta gamma delta' }), doc('docs', 'b', { t: 'alpha alpha' })],
      [doc('docs', 'a', { t: 'alpha beta' }), doc('docs', 'c', { t: 'gamma alpha zeta' })],
      [
        doc('docs', 'b', null),
        doc('docs', 'c', { t: 'alpha zeta zeta' }),
        doc('docs', 'c', { t: 'zeta alpha' }),
      ],
    ];
    for (const records of history) await apply(records);
    const scores = () =>
      replica.search
        .search('docs', [0], parseQuery('alpha OR zeta', limits), 10, TOTAL_EXACT_MAX)
        .matches.map(({ key, score }) => ({ key, score }));
    const afterHistory = scores();
    await replica.close();
    rmSync(dir, { recursive: true, force: true });
    replica = new Replica(dir);
    nextOffset = 0;
    await apply([doc('docs', 'a', { t: 'alpha beta' }), doc('docs', 'c', { t: 'zeta alpha' })]);
    expect(afterHistory).toEqual(scores());
  });

  it('scans in UTF-8 key order with prefix, start, end, after and limit', async () => {
    const keys = ['b', 'a', 'ab', 'é', 'z', 'aa'];
    await apply(keys.map((key) => doc('docs', key, { key })));
    await apply([doc('other', 'a', {})]);
    const scan = (range: object, limit = 10) =>
      replica.docs.scan('docs', range, limit).items.map((item) => item.key);
    expect(scan({})).toEqual(['a', 'aa', 'ab', 'b', 'z', 'é']);
    expect(scan({ prefix: 'a' })).toEqual(['a', 'aa', 'ab']);
    expect(scan({ start: 'ab', end: 'z' })).toEqual(['ab', 'b']);
    expect(scan({ after: 'ab' }, 2)).toEqual(['b', 'z']);
    expect(replica.docs.scan('docs', {}, 2).more).toBe(true);
    expect(replica.docs.scan('docs', { after: 'z' }, 2).more).toBe(false);
  });

  it('indexes nested strings; settings re-index with searchable fields, weights, tokenizer', async () => {
    await apply([
      doc('docs', 'n', { meta: { tags: ['Crème brûlée'] }, n: 3 }),
      doc('docs', 't', { title: 'apple', body: 'banana' }),
      doc('docs', 'u', { title: 'banana', body: 'apple apple' }),
    ]);
    expect(search('creme')).toEqual(['n']);
    expect(search('apple')).toEqual(['u', 't']);
    const settings = { searchable: ['title', 'body'], weights: { title: 10 } };
    await apply([doc('_settings', 'docs', settings)]);
    expect(search('apple')).toEqual(['t', 'u']);
    expect(search('creme')).toEqual([]);
    await apply([doc('_settings', 'docs', { tokenizer: 'trigram' })]);
    await apply([doc('docs', 'cjk', { text: '東京都は日本の首都です' })]);
    expect(search('日本の')).toEqual(['cjk']);
    expect(search('anan')).toEqual(['t', 'u'].sort());
    await apply([doc('_settings', 'docs', { tokenizer: 'porter unicode61 remove_diacritics 2' })]);
    await apply([doc('docs', 'run', { text: 'she was running' })]);
    expect(search('runs')).toEqual(['run']);
    expect(replica.docs.get('_settings', 'docs')).toBeUndefined();
    await apply([doc('_settings', 'docs', { searchable: [] })]);
    expect(search('running')).toEqual([]);
    await apply([doc('_settings', 'docs', null)]);
    expect(search('running')).toEqual(['run']);
  });

  it('searches fields named after built-in object properties, weighted 1 unless given', async () => {
    // A plain-object lookup of `constructor` finds Object: its text went into bm25()'s weights.
    const settings = { searchable: ['constructor', 'toString', '__proto__', 'title'] };
    await apply([doc('_settings', 'docs', settings)]);
    await apply([
      doc('docs', 'c', JSON.parse('{"constructor":"zebra","__proto__":"okapi","title":"x"}')),
    ]);
    expect(search('zebra')).toEqual(['c']);
    expect(search('okapi')).toEqual(['c']);
    expect(replica.applied(0)).toBe(2);
  });

  it('ignores invalid settings and keeps a non-JSON value as a string', async () => {
    await apply([doc('docs', 'a', { t: 'kept' })]);
    await apply([
      {
        collection: '_settings',
        key: 'docs',
        value: Buffer.from('{"tokenizer":"evil\'"}'),
        timestampMs: 1,
      },
    ]);
    await apply([
      { collection: 'docs', key: 'raw', value: Buffer.from('not json'), timestampMs: 1 },
    ]);
    expect(search('kept')).toEqual(['a']);
    expect(replica.docs.get('docs', 'raw')?.json).toBe('"not json"');
    expect(search('json')).toEqual(['raw']);
  });
});
