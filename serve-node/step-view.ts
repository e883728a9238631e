/**
 * The documents as the search store must see them while it applies a read answer: LMDB as of the
 * search store's checkpoints, plus the records of this answer applied so far, of every
 * topic-partition in it (LMDB takes them only after the search store has committed). One view
 * spans the whole answer, so a settings record that re-indexes a collection sees the documents
 * of that collection written earlier in the same answer, whatever their partition.
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

  *documentsOf(collection: string): Iterable<DocVersion> {
    const written = this.written.get(collection) ?? new Map<string, PreparedRecord>();
    for (const doc of this.docs.documentsOf(collection)) {
      if (!written.has(doc.key)) yield doc;
    }
    for (const record of written.values()) if (record.json !== null) yield record as DocVersion;
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
