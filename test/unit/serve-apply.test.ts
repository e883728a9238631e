// Proves the apply path: log batches of each topic-partition become LMDB documents and FTS5 rows
// with checkpoints in the same transactions, re-applying changes nothing, and settings records
// (the settings topic) re-index a collection, so the index is a function of the latest settings
// and the documents whatever order the two topics are applied in. An answer applied in slices
// (apply-slices.ts) ends where it ends applied whole.
import { DEFAULT_LIMITS as SERVE_LIMITS } from '../../serve-node/config.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { encodeBatch, type LogRecord } from '../../shared/batch-codec.js';
import { SETTINGS_TOPIC } from '../../shared/topics.js';
import { parseQuery } from '../../serve-node/fts-query.js';
import { prepareRecord } from '../../serve-node/prepared-record.js';
import { Replica } from '../../serve-node/replica.js';
import { applySlices } from '../../serve-node/apply-slices.js';
import { StepView } from '../../serve-node/step-view.js';

const TOTAL_EXACT_MAX = SERVE_LIMITS.searchTotalExactMax;
/** Small, so a re-index of these few documents takes several steps. */
const REINDEX_STEP_DOCS = 2;

const limits = { queryBytesMax: 1024, queryTermsMax: 32 };
/** A record of topic `topic` (a collection, or the settings topic with key = the collection). */
interface TopicRecord extends LogRecord {
  topic: string;
}

const doc = (topic: string, key: string, value: unknown): TopicRecord => ({
  topic,
  key,
  value: value === null ? null : Buffer.from(JSON.stringify(value)),
  timestampMs: 1_700_000_000_000,
});
const settingsOf = (collection: string, value: unknown) => doc(SETTINGS_TOPIC, collection, value);

let dir: string;
let replica: Replica;
/** `topic/partition` → the next offset the log would give. */
let next = new Map<string, number>();

/**
 * Appends records (all of one topic) as one batch at the topic-partition's next offset, as the
 * log would, and applies it.
 */
async function apply(records: TopicRecord[], partition = 0): Promise<Buffer> {
  const topic = records[0].topic;
  const at = next.get(`${topic}/${partition}`) ?? 0;
  const batch = encodeBatch(
    records.map(({ topic: _topic, ...record }) => record),
    { baseOffset: at },
  );
  replica.applyMany([{ topic, partition, fromOffset: at, batches: batch }]);
  next.set(`${topic}/${partition}`, at + records.length);
  reindex();
  return batch;
}

/** Takes the re-index steps a settings record started, two documents a step, as the background steps would. */
function reindex(): void {
  while (replica.reindexStep(REINDEX_STEP_DOCS) !== null);
}

const search = (q: string, partitions = [0]) =>
  replica.search
    .search('docs', partitions, parseQuery(q, limits), 20, TOTAL_EXACT_MAX)
    .matches.map((m) => m.key);

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'serve-apply-'));
  replica = new Replica(dir);
  next = new Map();
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
    expect(replica.applied('docs', 0)).toBe(4);
    expect(replica.applied('other', 0)).toBe(0);
    expect(search('three')).toEqual(['a']);
    expect(search('one')).toEqual([]);
    expect(search('two')).toEqual([]);
  });

  it('re-applying a batch the stores hold changes nothing', async () => {
    const first = await apply([doc('docs', 'a', { t: 'alpha' })]);
    await apply([doc('docs', 'a', { t: 'beta' })]);
    replica.applyMany([{ topic: 'docs', partition: 0, fromOffset: 0, batches: first }]);
    expect(replica.docs.get('docs', 'a')?.json).toBe('{"t":"beta"}');
    expect(search('alpha')).toEqual([]);
    expect(replica.applied('docs', 0)).toBe(2);
  });

  it('an answer applied in slices, each twice, leaves what it leaves applied whole', async () => {
    const words = ['alpha', 'beta', 'gamma', 'delta'];
    const records = (from: number) =>
      Array.from({ length: 12 }, (_, i) => ({
        key: `k${(from + i) % 17}`,
        // Every fifth a tombstone; the rest overwrite earlier versions now and then.
        value:
          (from + i) % 5 === 4
            ? null
            : Buffer.from(JSON.stringify({ t: `${words[(from + i) % 4]} ${words[i % 3]}` })),
        timestampMs: 1,
      }));
    const batches = Buffer.concat(
      [0, 12, 24].map((base) => encodeBatch(records(base), { baseOffset: base })),
    );
    replica.applyMany([{ topic: 'docs', partition: 0, fromOffset: 0, batches }]);
    const slicedDir = mkdtempSync(join(tmpdir(), 'serve-apply-sliced-'));
    const sliced = new Replica(slicedDir);
    try {
      const answer = [{ topic: 'docs', partition: 0, fromOffset: 0, batches }];
      for (const slice of applySlices(answer, { recordsMax: 5, bytesMax: 1024 * 1024 })) {
        sliced.applyMany(slice);
        sliced.applyMany(slice);
      }
      expect(sliced.applied('docs', 0)).toBe(replica.applied('docs', 0));
      for (let k = 0; k < 17; k++) {
        expect(sliced.docs.get('docs', `k${k}`)).toEqual(replica.docs.get('docs', `k${k}`));
      }
      for (const word of words) {
        const query = parseQuery(word, limits);
        expect(sliced.search.search('docs', [0], query, 20, TOTAL_EXACT_MAX)).toEqual(
          replica.search.search('docs', [0], query, 20, TOTAL_EXACT_MAX),
        );
      }
    } finally {
      await sliced.close();
      rmSync(slicedDir, { recursive: true, force: true });
    }
  });

  it('LMDB behind the search store (a crash between the commits) catches up to the same state', async () => {
    const records = [doc('docs', 'a', { t: 'gamma' }), doc('docs', 'b', { t: 'delta' })];
    const batch = encodeBatch(records.map(({ topic: _topic, ...record }) => record));
    // The search store commits first; a crash before LMDB's commit leaves LMDB behind.
    replica.search.applyMany(
      [
        {
          topic: 'docs',
          partition: 0,
          records: records.map((r, offset) => prepareRecord({ ...r, offset }, 'docs', 0)),
          nextOffset: 2,
        },
      ],
      new StepView(replica.docs),
    );
    expect(replica.readFrom('docs', 0)).toBe(null);
    expect(replica.diverged('docs', 0)).toBe(true);
    replica.applyMany([{ topic: 'docs', partition: 0, fromOffset: 0, batches: batch }]);
    expect(replica.docs.applied('docs', 0)).toBe(2);
    expect(replica.search.applied('docs', 0)).toBe(2);
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
    next = new Map();
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
    await apply([settingsOf('docs', settings)]);
    expect(search('apple')).toEqual(['t', 'u']);
    expect(search('creme')).toEqual([]);
    await apply([settingsOf('docs', { tokenizer: 'trigram' })]);
    await apply([doc('docs', 'cjk', { text: '東京都は日本の首都です' })]);
    expect(search('日本の')).toEqual(['cjk']);
    expect(search('anan')).toEqual(['t', 'u'].sort());
    await apply([settingsOf('docs', { tokenizer: 'porter unicode61 remove_diacritics 2' })]);
    await apply([doc('docs', 'run', { text: 'she was running' })]);
    expect(search('runs')).toEqual(['run']);
    expect(replica.docs.get(SETTINGS_TOPIC, 'docs')).toBeUndefined();
    expect(replica.applied(SETTINGS_TOPIC, 0)).toBe(3);
    await apply([settingsOf('docs', { searchable: [] })]);
    expect(search('running')).toEqual([]);
    await apply([settingsOf('docs', null)]);
    expect(search('running')).toEqual(['run']);
  });

  it('searches fields named after built-in object properties, weighted 1 unless given', async () => {
    // A plain-object lookup of `constructor` finds Object: its text went into bm25()'s weights.
    const settings = { searchable: ['constructor', 'toString', '__proto__', 'title'] };
    await apply([settingsOf('docs', settings)]);
    await apply([
      doc('docs', 'c', JSON.parse('{"constructor":"zebra","__proto__":"okapi","title":"x"}')),
    ]);
    expect(search('zebra')).toEqual(['c']);
    expect(search('okapi')).toEqual(['c']);
    expect(replica.applied('docs', 0)).toBe(1);
    expect(replica.applied(SETTINGS_TOPIC, 0)).toBe(1);
  });

  it('ignores invalid settings and keeps a non-JSON value as a string', async () => {
    await apply([doc('docs', 'a', { t: 'kept' })]);
    await apply([
      {
        topic: SETTINGS_TOPIC,
        key: 'docs',
        value: Buffer.from('{"tokenizer":"evil\'"}'),
        timestampMs: 1,
      },
    ]);
    await apply([{ topic: 'docs', key: 'raw', value: Buffer.from('not json'), timestampMs: 1 }]);
    expect(search('kept')).toEqual(['a']);
    expect(replica.docs.get('docs', 'raw')?.json).toBe('"not json"');
    expect(search('json')).toEqual(['raw']);
  });

  it('settings before any document of the collection index its documents with them', async () => {
    await apply([settingsOf('docs', { searchable: ['title'] })]);
    await apply([doc('docs', 'a', { title: 'kiwi', body: 'mango' })]);
    expect(search('kiwi')).toEqual(['a']);
    expect(search('mango')).toEqual([]);
  });

  it('one answer of documents and settings together: the settings see the documents before them', async () => {
    const docsBatch = encodeBatch(
      [{ key: 'a', value: Buffer.from('{"title":"kiwi","body":"mango"}'), timestampMs: 1 }],
      { baseOffset: 0 },
    );
    const settingsBatch = encodeBatch(
      [{ key: 'docs', value: Buffer.from('{"searchable":["body"]}'), timestampMs: 1 }],
      { baseOffset: 0 },
    );
    replica.applyMany([
      { topic: 'docs', partition: 0, fromOffset: 0, batches: docsBatch },
      { topic: SETTINGS_TOPIC, partition: 0, fromOffset: 0, batches: settingsBatch },
    ]);
    reindex();
    expect(search('mango')).toEqual(['a']);
    expect(search('kiwi')).toEqual([]);
  });

  it('the index is the same whatever order the settings and collection topics are applied in', async () => {
    const writes = [
      [doc('docs', 'a', { title: 'alpha beta', body: 'gamma' })],
      [doc('docs', 'b', { title: 'gamma', body: 'alpha alpha' })],
      [doc('docs', 'a', { title: 'beta', body: 'alpha delta' }), doc('docs', 'c', { body: 'x' })],
    ];
    const settings = [
      settingsOf('docs', { searchable: ['title', 'body'], weights: { title: 3 } }),
      settingsOf('docs', { searchable: ['body', 'title'], weights: { body: 2 } }),
    ];
    const ranking = () =>
      replica.search
        .search('docs', [0, 1], parseQuery('alpha OR beta OR gamma', limits), 10, TOTAL_EXACT_MAX)
        .matches.map(({ key, score }) => ({ key, score }));
    // Settings between the writes, as one replica applied them.
    await apply(writes[0], 0);
    await apply([settings[0]]);
    await apply(writes[1], 1);
    await apply([settings[1]]);
    await apply(writes[2], 0);
    const interleaved = ranking();
    // Another replica: every write first, then the settings (the two topics are not ordered).
    await replica.close();
    rmSync(dir, { recursive: true, force: true });
    replica = new Replica(dir);
    next = new Map();
    await apply(writes[0], 0);
    await apply(writes[1], 1);
    await apply(writes[2], 0);
    await apply(settings);
    expect(ranking()).toEqual(interleaved);
    expect(interleaved.map((hit) => hit.key).sort()).toEqual(['a', 'b']);
  });

  it('re-indexes a collection only once its LMDB has caught up with the search store', async () => {
    const records = [doc('docs', 'a', { title: 'kiwi', body: 'mango' })];
    const batch = encodeBatch(records.map(({ topic: _topic, ...record }) => record));
    // A crash between the two commits: the search store holds offset 0, LMDB does not.
    replica.search.applyMany(
      [
        {
          topic: 'docs',
          partition: 0,
          records: records.map((r, offset) => prepareRecord({ ...r, offset }, 'docs', 0)),
          nextOffset: 1,
        },
      ],
      new StepView(replica.docs),
    );
    replica.docs.applyMany([{ topic: 'docs', partition: 0, records: [], nextOffset: 0 }]);
    const settingsBatch = encodeBatch(
      [{ key: 'docs', value: Buffer.from('{"searchable":["body"]}'), timestampMs: 1 }],
      { baseOffset: 0 },
    );
    replica.applyMany([
      { topic: SETTINGS_TOPIC, partition: 0, fromOffset: 0, batches: settingsBatch },
    ]);
    expect(replica.applied(SETTINGS_TOPIC, 0)).toBe(1);
    // Copying from LMDB now would miss `a`: the step waits, and the record is not in effect.
    expect(replica.reindexStep(REINDEX_STEP_DOCS)).toBeNull();
    expect(replica.settingsApplied('docs')).toBe(0);
    expect(search('kiwi')).toEqual(['a']);
    replica.applyMany([{ topic: 'docs', partition: 0, fromOffset: 0, batches: batch }]);
    expect(replica.reindexStep(REINDEX_STEP_DOCS)).toEqual({ collection: 'docs', swapped: true });
    expect(replica.settingsApplied('docs')).toBe(1);
    expect(search('mango')).toEqual(['a']);
    expect(search('kiwi')).toEqual([]);
  });
});
