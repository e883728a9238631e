// Proves that the first step of a drop forgets what the stores held of the collection's topic:
// its checkpoints and its view epochs. A view dropped and declared again under the same name
// claims epochs from a new topic's offsets, which may be below the old topic's: an epoch kept
// would fence the new view's every record (serve-node/view-fence.ts).
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
    store.markDropping('counts');
    // The documents are still stored (the drop's later steps delete them), yet none is read.
    expect(store.countAfter('counts', null)).toBe(3);
    expect(visible(store, 'counts')).toEqual([0, 0, 0, 0]);
    expect(visible(store, 'other')).toEqual([1, 3, 3, 3]);
    // A restart finds the mark: a drop it resumes in the background is not read from either.
    await store.close();
    store = new DocStore(dir.path, { noSync: false });
    expect(visible(store, 'counts')).toEqual([0, 0, 0, 0]);
    expect(store.deleteSome('counts', 2)).toBe(2);
    expect(store.deleteSome('counts', 2)).toBe(1);
    store.unmarkDropping('counts');
    // Created again once the drop ended: its documents are read.
    apply(store);
    expect(visible(store, 'counts')).toEqual([1, 3, 3, 3]);
  });
});
