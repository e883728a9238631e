// Proves that the first step of a drop forgets what the stores held of the collection's topic:
// its checkpoints and its view epochs. A view dropped and declared again under the same name
// claims epochs from a new topic's offsets, which may be below the old topic's: an epoch kept
// would fence the new view's every record (serve-node/view-fence.ts). And that a drop moves the
// collection to a new key space: reads answer nothing of the dropped incarnation while its
// documents are still stored, a collection created again under the name is written and read in
// its own space meanwhile, the deletion touches the old space only, and a mark written before key
// spaces (`dropping:<collection>`) is read as space 0's, the collection moved past it.
import { open } from 'lmdb';
import { afterEach, describe, expect, it } from 'vitest';
import { DocStore } from '../../serve-node/doc-store.js';
import { prepareRecord } from '../../serve-node/prepared-record.js';
import { tempDir, type TempDir } from '../harness/index.js';

let dir: TempDir | null = null;
let store: DocStore | null = null;
afterEach(async () => {
  await store?.close();
  store = null;
  dir?.cleanup();
  dir = null;
});

describe('DocStore drop', () => {
  it("forgets the dropped topic's checkpoints and view epochs, and keeps the others'", async () => {
    dir = tempDir('doc-store-drop');
    store = new DocStore(dir.path, { noSync: false });
    store.applyMany(
      ['counts', 'other'].map((topic) => ({
        topic,
        partition: 0,
        records: [
          prepareRecord(
            { offset: 7, key: 'k', value: new TextEncoder().encode('{"n":1}'), timestampMs: 0 },
            topic,
            0,
          ),
        ],
        nextOffset: 8,
        epoch: 7,
      })),
    );
    expect(store.epoch('counts', 0)).toBe(7);
    store.markDropping('counts');
    expect(store.applied('counts', 0)).toBeNull();
    expect(store.epoch('counts', 0)).toBe(-1);
    expect(store.applied('other', 0)).toBe(8);
    expect(store.epoch('other', 0)).toBe(7);
  });

  it('answers nothing of a collection marked as being dropped, before a restart and after', async () => {
    dir = tempDir('doc-store-dropping-reads');
    store = new DocStore(dir.path, { noSync: false });
    const record = (topic: string, offset: number) =>
      prepareRecord(
        { offset, key: `k${offset}`, value: new TextEncoder().encode('{"n":1}'), timestampMs: 0 },
        topic,
        0,
      );
    const apply = (target: DocStore) =>
      target.applyMany(
        ['counts', 'other'].map((topic) => ({
          topic,
          partition: 0,
          records: [0, 1, 2].map((offset) => record(topic, offset)),
          nextOffset: 3,
        })),
      );
    apply(store);
    const visible = (target: DocStore, topic: string) => [
      target.get(topic, 'k0') === undefined ? 0 : 1,
      target.scan(topic, {}, 10).items.length,
      target.countDocuments(topic, null),
      target.countDocuments(topic, new Set([0])),
    ];
    expect(visible(store, 'counts')).toEqual([1, 3, 3, 3]);
    const dropped = { collection: 'counts', space: store.markDropping('counts') };
    expect(dropped.space).toBe(0);
    expect(store.droppingSpaces()).toEqual([dropped]);
    // The documents are still stored (the drop's later steps delete them), yet none is read.
    expect(store.countAfter(dropped.collection, null, dropped.space)).toBe(3);
    expect(visible(store, 'counts')).toEqual([0, 0, 0, 0]);
    expect(visible(store, 'other')).toEqual([1, 3, 3, 3]);
    // A restart finds the mark: a drop it resumes in the background is not read from either.
    await store.close();
    store = new DocStore(dir.path, { noSync: false });
    expect(store.droppingSpaces()).toEqual([dropped]);
    expect(visible(store, 'counts')).toEqual([0, 0, 0, 0]);
    // Created again before the deletion ends: its own documents are read, the old ones not (k0
    // is a key of both).
    const again = prepareRecord(
      { offset: 5, key: 'k0', value: new TextEncoder().encode('{"n":2}'), timestampMs: 0 },
      'counts',
      0,
    );
    store.applyMany([{ topic: 'counts', partition: 0, records: [again], nextOffset: 6 }]);
    expect(visible(store, 'counts')).toEqual([1, 1, 1, 1]);
    expect(store.get('counts', 'k0')).toMatchObject({ offset: 5, json: '{"n":2}' });
    expect(store.get('counts', 'k1')).toBeUndefined();
    expect(store.collectionBytes().get('counts')).toBeGreaterThan(0);
    expect(store.deleteSome(dropped, 2)).toBe(2);
    expect(store.deleteSome(dropped, 2)).toBe(1);
    expect(store.deleteSome(dropped, 2)).toBe(0);
    store.unmarkDropping(dropped);
    expect(store.droppingSpaces()).toEqual([]);
    expect(store.scan('counts', {}, 10).items.map((item) => item.offset)).toEqual([5]);
    expect(visible(store, 'other')).toEqual([1, 3, 3, 3]);
  });

  it('reads a mark of before key spaces as space 0, and moves the collection past it', async () => {
    dir = tempDir('doc-store-old-mark');
    store = new DocStore(dir.path, { noSync: false });
    store.applyMany([
      {
        topic: 'counts',
        partition: 0,
        records: [0, 1].map((offset) =>
          prepareRecord(
            { offset, key: `k${offset}`, value: new TextEncoder().encode('{}'), timestampMs: 0 },
            'counts',
            0,
          ),
        ),
        nextOffset: 2,
      },
    ]);
    await store.close();
    store = null;
    // As a store of before key spaces marks a drop under way.
    const env = open({ path: dir.path });
    await env
      .openDB<unknown, string>({ name: 'meta', encoding: 'json' })
      .put('dropping:counts', true);
    await env.close();
    store = new DocStore(dir.path, { noSync: false });
    store.upgradeDroppingMarks();
    expect(store.droppingSpaces()).toEqual([{ collection: 'counts', space: 0 }]);
    expect(store.get('counts', 'k0')).toBeUndefined();
    expect(store.countAfter('counts', null, 0)).toBe(2);
    // Done once: a second opening finds nothing to upgrade.
    store.upgradeDroppingMarks();
    expect(store.droppingSpaces()).toEqual([{ collection: 'counts', space: 0 }]);
    expect(store.markDropping('counts')).toBe(1);
  });
});
