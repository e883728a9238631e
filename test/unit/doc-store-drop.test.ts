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
});
