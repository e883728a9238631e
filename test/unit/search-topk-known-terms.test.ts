// Proves the writer's memory of term counts (topk-index.ts: unlisted terms' counts read from FTS5
// once, then kept) changes no list: writes after the store is reopened (every count read from
// FTS5) and with the memory bounded to nothing (forgotten after every write) leave the same terms
// and postings as the lists built from FTS5 at once, and list exactly FTS5's terms of at least the
// threshold's rows after every write, also where the words are numbered after thousands of others;
// and that what the writer holds by term number grows with each table's own terms, not with
// every table's (tables written one after another hold as much each as the first alone, beside
// the arrays shared by every table, as long as the largest table's ids and counted once).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { encodeBatch, type LogRecord } from '../../shared/batch-codec.js';
import { Replica } from '../../serve-node/replica.js';
import { SEARCH_FILE } from '../../serve-node/search-store.js';
import { storedPostings } from '../../serve-node/topk-index.js';
import { seededRandom, testSeed, type Random } from '../harness/index.js';

const LISTED_DF_MIN = 8;
const PARTITIONS = 2;
const BATCH_RECORDS = 13;
/** Words a document draws from, the first far more often: some cross the threshold, some not. */
const WORDS = Array.from({ length: 60 }, (_, i) => `t${i}`);
/** Distinct terms of a document (each then listed): past the writer's first numbers' growths. */
const FILLER_TERMS = 5_000;
/** Bytes the writer's arrays shared by every table hold a term id. */
const SHARED_BYTES_AN_ID = 36;

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

class Writer {
  private readonly next = new Map<number, number>();
  replica: Replica;

  constructor(
    readonly dir: string,
    private readonly knownTermsMax: number,
  ) {
    this.replica = this.open();
  }

  open(): Replica {
    return new Replica(this.dir, {
      topkListedDfMin: LISTED_DF_MIN,
      topkKnownTermsMax: this.knownTermsMax,
    });
  }

  async reopen(): Promise<void> {
    await this.replica.close();
    this.replica = this.open();
  }

  write(
    random: Random,
    keys: number,
    deletes: boolean,
    batchRecords = BATCH_RECORDS,
    words = WORDS,
  ): void {
    for (let p = 0; p < PARTITIONS; p++) {
      const records: LogRecord[] = [];
      for (let i = 0; i < batchRecords; i++) {
        const key = `k${random.int(0, keys - 1) * PARTITIONS + p}`;
        const text = Array.from({ length: random.int(1, 8) }, () =>
          random.pick(words.slice(0, random.int(1, words.length))),
        ).join(' ');
        const value = deletes && random.next() < 0.3 ? null : Buffer.from(JSON.stringify({ text }));
        records.push({ key, value, timestampMs: 1_700_000_000_000 });
      }
      const at = this.next.get(p) ?? 0;
      const batches = encodeBatch(records, { baseOffset: at });
      this.replica.applyMany([{ topic: 'docs', partition: p, fromOffset: at, batches }]);
      this.next.set(p, at + records.length);
    }
  }

  /** `copies` documents of `text` in partition 0 in one batch, under keys no other write uses. */
  writeCopies(copies: number, text: string): void {
    const at = this.next.get(0) ?? 0;
    const value = Buffer.from(JSON.stringify({ text }));
    const records = Array.from({ length: copies }, (_, i) => ({
      key: `filler${i}`,
      value,
      timestampMs: 0,
    }));
    const batches = encodeBatch(records, { baseOffset: at });
    this.replica.applyMany([{ topic: 'docs', partition: 0, fromOffset: at, batches }]);
    this.next.set(0, at + copies);
  }
}

/** The listed terms with their counts, and the terms FTS5 holds in at least LISTED_DF_MIN rows. */
function listedAndFts5(dir: string): { listed: string[]; fts5: string[] } {
  const db = new Database(join(dir, SEARCH_FILE), { readonly: true });
  try {
    const table = db.prepare('SELECT table_id FROM collection_tables').pluck().get() as number;
    db.exec(`CREATE VIRTUAL TABLE temp.terms USING fts5vocab(main, fts_${table}, row)`);
    const lines = (sql: string) =>
      (db.prepare(sql).raw().all() as unknown[][]).map((row) => row.join(' '));
    return {
      listed: lines('SELECT term, df FROM topk_terms ORDER BY term'),
      fts5: lines(`SELECT term, doc FROM temp.terms WHERE doc >= ${LISTED_DF_MIN} ORDER BY term`),
    };
  } finally {
    db.close();
  }
}

/** The lists as lines: each listed term with its count, and each posting. */
function dump(dir: string): string[] {
  const db = new Database(join(dir, SEARCH_FILE), { readonly: true });
  try {
    const terms = db.prepare('SELECT term, df FROM topk_terms ORDER BY term').raw().all();
    const postings = [...storedPostings(db, null)].map(
      (p) => `${p.term} ${p.tf} ${p.len} ${p.row}`,
    );
    return [...terms.map((row) => (row as unknown[]).join(' ')), ...postings];
  } finally {
    db.close();
  }
}

/** The lists built from FTS5 at once: the lists deleted, and the store opened again. */
async function rebuilt(writer: Writer): Promise<string[]> {
  await writer.replica.close();
  const db = new Database(join(writer.dir, SEARCH_FILE));
  db.exec('DELETE FROM topk_settings; DELETE FROM topk_blocks; DELETE FROM topk_terms');
  db.close();
  writer.replica = writer.open();
  await writer.replica.close();
  return dump(writer.dir);
}

describe('top-k lists written with counts kept in memory', () => {
  for (const knownTermsMax of [1_000_000, 0]) {
    it(`are the lists FTS5 makes, the store reopened mid-history (known terms max ${knownTermsMax})`, async () => {
      const seed = testSeed('search-topk-known-terms');
      const random = seededRandom(seed);
      const dir = mkdtempSync(join(tmpdir(), 'search-topk-known-'));
      dirs.push(dir);
      const writer = new Writer(dir, knownTermsMax);
      // After every write, the listed terms are FTS5's terms of at least LISTED_DF_MIN rows.
      const writeAndCheck = (deletes: boolean, batchRecords?: number, words?: string[]) => {
        writer.write(random, 40, deletes, batchRecords, words);
        const { listed, fts5 } = listedAndFts5(dir);
        expect(listed, `seed ${seed}`).toEqual(fts5);
      };
      // A row a partition at a time first, of three words: the table and its words grow past the
      // threshold by small writes.
      for (let i = 0; i < 8; i++) writeAndCheck(false, 1, WORDS.slice(0, 3));
      for (let i = 0; i < 6; i++) writeAndCheck(false);
      await writer.reopen();
      // Thousands of listed terms first after the reopen, numbered (topk-term-ids.ts) past its
      // tables' first growths, each looked up again in the same transaction; the words after them.
      const filler = Array.from({ length: FILLER_TERMS }, (_, i) => `filler${i}`).join(' ');
      writer.writeCopies(LISTED_DF_MIN + 2, filler);
      const { listed, fts5 } = listedAndFts5(dir);
      expect(listed, `seed ${seed}`).toEqual(fts5);
      for (let i = 0; i < 12; i++) writeAndCheck(true);
      for (let i = 0; i < 6; i++) writer.write(random, 40, true);
      const lived = dump(dir);
      expect(lived.filter((line) => line.split(' ').length === 2).length).toBeGreaterThan(3);
      expect(await rebuilt(writer), `seed ${seed}`).toEqual(lived);
    });
  }
});

describe('what the writer holds of terms by number', () => {
  it('grows with each table its own terms: tables written in turn hold as much each as one', async () => {
    const tables = 12;
    const termsOfTable = 3_000;
    const dir = mkdtempSync(join(tmpdir(), 'search-topk-held-'));
    dirs.push(dir);
    const replica = new Replica(dir, {
      topkListedDfMin: LISTED_DF_MIN,
      topkKnownTermsMax: 1_000_000,
    });
    try {
      // Each table's terms its own, all of one length, so each table's arrays are alike.
      const writeTable = (table: number) => {
        const words = Array.from(
          { length: termsOfTable },
          (_, i) => `c${String(table).padStart(2, '0')}w${String(i).padStart(4, '0')}`,
        );
        const records = Array.from({ length: LISTED_DF_MIN * 2 }, (_, i) => ({
          key: `k${i}`,
          value: Buffer.from(JSON.stringify({ text: words.join(' ') })),
          timestampMs: 0,
        }));
        const batches = encodeBatch(records, { baseOffset: 0 });
        replica.applyMany([{ topic: `c${table}`, partition: 0, fromOffset: 0, batches }]);
      };
      writeTable(0);
      const one = replica.search.topkKnownTermsHeld();
      expect(one.terms).toBe(termsOfTable);
      for (let table = 1; table < tables; table++) writeTable(table);
      const all = replica.search.topkKnownTermsHeld();
      expect(all.terms).toBe(tables * termsOfTable);
      // The transaction's arrays (topk-index.ts) are shared, as long as the largest table's ids:
      // four of 8 bytes and one of 4 an id, held whatever the tables.
      expect(one.sharedArrayBytes).toBeGreaterThanOrEqual(SHARED_BYTES_AN_ID * termsOfTable);
      // Each table's own arrays hold at least its counts (4 bytes an id), beside the shared ones.
      expect(one.arrayBytes).toBeGreaterThanOrEqual(one.sharedArrayBytes + 4 * termsOfTable);
      expect(all.sharedArrayBytes).toBe(one.sharedArrayBytes);
      const ownOfOne = one.arrayBytes - one.sharedArrayBytes;
      expect(all.arrayBytes).toBeLessThanOrEqual(tables * ownOfOne + one.sharedArrayBytes);
    } finally {
      await replica.close();
    }
  });
});
