/**
 * The documents as the search store must see them while it applies a read answer: LMDB as of the
 * search store's checkpoints, plus the records of this answer applied so far, of every
 * topic-partition in it (LMDB takes them only after the search store has committed).
 */
import type { DocStore } from './doc-store.js';
import type { DocVersion, DocView } from './search-store.js';
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

  /** A document record of a collection topic (settings records write no document). */
  advance(record: PreparedRecord): void {
    let written = this.written.get(record.collection);
    if (written === undefined) {
      written = new Map();
      this.written.set(record.collection, written);
    }
    written.set(record.key, record);
  }
}
