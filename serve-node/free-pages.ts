/**
 * Giving the search store's free pages back to the file system once writes have paused. A segment
 * merge rewrites a table's whole FTS5 index and frees the old segments' pages: after three bulk
 * loads of 10^5 scale documents 26, 54 and 134 MiB of the file were free pages (0.36-1.82 times
 * the raw NDJSON), kept until later writes reuse them. The store is created with `auto_vacuum = INCREMENTAL`, so SQLite's own
 * `incremental_vacuum` moves pages from the end of the file into the free ones and truncates it
 * (at the next checkpoint, in WAL mode), a few pages a command, in steps of bounded time like
 * merges'. Stores created before (auto_vacuum NONE) have nothing to give back: SQLite sets
 * auto_vacuum only when a file is created or by a VACUUM, a rewrite of the whole file.
 */
import type Database from 'better-sqlite3';
import type { Statement } from 'better-sqlite3';
import { assert } from '../shared/assert.js';

/** `PRAGMA auto_vacuum`'s value for INCREMENTAL. */
const AUTO_VACUUM_INCREMENTAL = 2;
/**
 * Pages one command moves at most: a step checks its deadline between commands. A page moved
 * costs about what a page of a merge does (a read and a write of 4 KiB, a pointer-map update).
 */
const VACUUM_PAGES_A_COMMAND = 64;

/** What a step did: gave back pages, and whether any are left. */
export interface FreePagesStep {
  pages: number;
  finished: boolean;
}

export class FreePages {
  private readonly freePages: Statement;
  private readonly incremental: boolean;

  constructor(private readonly db: Database.Database) {
    this.freePages = db.prepare('PRAGMA freelist_count').pluck();
    this.incremental = db.pragma('auto_vacuum', { simple: true }) === AUTO_VACUUM_INCREMENTAL;
  }

  /** The free pages this store can give back now (none when it was created without). */
  count(): number {
    return this.incremental ? (this.freePages.get() as number) : 0;
  }

  /**
   * Gives back free pages in one transaction until `deadlineMs` (performance.now()) has passed
   * (one command at least) or none are left. `before` is count(), which the caller read to know
   * there are some (at least one).
   */
  step(deadlineMs: number, before: number): FreePagesStep {
    assert(before > 0, `a free-pages step needs free pages, not ${before}`);
    const left = this.db.transaction(() => {
      let free = before;
      do {
        // exec, not a prepared statement's run(): the pragma moves one page a step of its statement.
        this.db.exec(`PRAGMA incremental_vacuum(${VACUUM_PAGES_A_COMMAND})`);
        free = this.count();
      } while (free > 0 && performance.now() < deadlineMs);
      return free;
    })();
    return { pages: before - left, finished: left === 0 };
  }
}
