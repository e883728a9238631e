/**
 * The documents of one partition as the search store must see them while it applies a read
 * answer: LMDB as of the search store's checkpoint, plus the records of this answer applied so
 * far (LMDB takes them only after the search store has committed).
 */
import type { DocStore } from './doc-store.js';
import type { DocVersion, DocView } from './search-store.js';
import { SETTINGS_COLLECTION } from './collection-settings.js';
import type { PreparedRecord } from './prepared-record.js';

export class StepView implements DocView {
  /** collection → key → the record written in this step (json null: deleted). */
  private readonly written = new Map<string, Map<string, PreparedRecord>>();

  constructor(private readonly docs: DocStore) {}

  get(collection: string, key: string): DocVersion | undefined {
    const written = this.written.get(collection)?.get(key);
    if (written === undefined) return this.docs.get(collection, key);
    return written.json === null ? undefined : (written as DocVersion);
  }

  *documentsOf(collection: string, partition: number): Iterable<DocVersion> {
    const written = this.written.get(collection) ?? new Map<string, PreparedRecord>();
    for (const doc of this.docs.documentsOf(collection, partition)) {
      if (!written.has(doc.key)) yield doc;
    }
    for (const record of written.values()) if (record.json !== null) yield record as DocVersion;
  }

  advance(record: PreparedRecord): void {
    if (record.collection === SETTINGS_COLLECTION) return;
    let written = this.written.get(record.collection);
    if (written === undefined) {
      written = new Map();
      this.written.set(record.collection, written);
    }
    written.set(record.key, record);
  }
}
