// Proves that the search store gives its free pages back to the file system
// (serve-node/free-pages.ts): after segment merges free pages, steps move them out and the file
// shrinks at the next checkpoint, every answer (hits, exact scores, totals, filters, facets) as
// before; the pages left, and the top-k merges due, are counted for the status until steps have
// taken them (none after a rebuild of the lists); a step waits for writes to pause as a merge does, and so do whole top-k merges; a
// store created before (auto_vacuum NONE) is opened and read as it was, with nothing to give
// back; and the WAL file is cut back to its bound when it starts over, and emptied once the store
// is idle. Real replicas (LMDB and
// SQLite in temp dirs), fed through their apply path.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../shared/logger.js';
import { BackgroundSteps } from '../../serve-node/background-steps.js';
import { DEFAULT_LIMITS } from '../../serve-node/config.js';
import { Replica } from '../../serve-node/replica.js';
import { SEARCH_FILE, WAL_SUFFIX } from '../../serve-node/search-store.js';
import { answers, doc, load } from '../harness/segment-corpus.js';

/** Merge and give back at once, whatever was written: the tests choose when writes happen. */
const AT_ONCE = { quietMs: 0, writtenPercent: 0 };
const STEPS_MAX = 100_000;
const WAL_BYTES_KEPT_MAX = 256 * 1024;

const dirs: string[] = [];
const replicas: Replica[] = [];
afterEach(async () => {
  for (const replica of replicas.splice(0)) await replica.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function openReplica(dir = mkdtempSync(join(tmpdir(), 'free-pages-'))): Replica {
  if (!dirs.includes(dir)) dirs.push(dir);
  const replica = new Replica(dir, {
    topkListedDfMin: DEFAULT_LIMITS.searchTopkListedDfMin,
    walBytesKeptMax: WAL_BYTES_KEPT_MAX,
  });
  replicas.push(replica);
  return replica;
}

function freePages(dir: string): number {
  const db = new Database(join(dir, SEARCH_FILE), { readonly: true });
  try {
    return db.pragma('freelist_count', { simple: true }) as number;
  } finally {
    db.close();
  }
}

function mergeAll(replica: Replica): void {
  for (let steps = 0; replica.mergeStep(0, AT_ONCE) !== null; steps++) {
    expect(steps).toBeLessThan(STEPS_MAX);
  }
}

/** Steps until none is left to take: the pages given back. */
function giveBackAll(replica: Replica): number {
  let pages = 0;
  for (let steps = 0; ; steps++) {
    expect(steps).toBeLessThan(STEPS_MAX);
    const step = replica.freePagesStep(0, AT_ONCE);
    if (step === null) return pages;
    if ('waitMs' in step) throw new Error('a step waited with a quiet time of 0');
    pages += step.pages;
  }
}

const fileBytes = (dir: string) => statSync(join(dir, SEARCH_FILE)).size;

describe('free pages of the search store', () => {
  it('go back to the file system after merges, every answer as it was', () => {
    const replica = openReplica();
    load(replica, 3_000, 25);
    mergeAll(replica);
    replica.flush();
    const before = answers(replica);
    const free = freePages(replica.dir);
    const bytes = fileBytes(replica.dir);
    expect(free).toBeGreaterThan(10);

    const pages = giveBackAll(replica);
    replica.flush();
    expect(pages).toBe(free);
    expect(freePages(replica.dir)).toBe(0);
    expect(fileBytes(replica.dir)).toBeLessThanOrEqual(bytes - free * 4096);
    expect(answers(replica)).toEqual(before);
  });

  it("go back in the serving loop's steps after the merge, with no applied answer to start them", async () => {
    const replica = openReplica();
    load(replica, 2_000, 20);
    const logger = createLogger('test', 'silent');
    const errors = vi.spyOn(logger, 'error');
    const steps = new BackgroundSteps({
      replica: () => replica,
      stepDocsMax: 50,
      stepMsMax: 10,
      retryMsMax: 5_000,
      merges: { quietMs: 200, writtenPercent: 10, stepMsMax: 5 },
      paused: () => null,
      onSwapped: () => undefined,
      logger,
    });
    try {
      steps.kick();
      await vi.waitFor(
        () => {
          expect(replica.mergesDue({ quietMs: 200, writtenPercent: 10 })).toEqual([]);
          expect(replica.topkMergesDue({ quietMs: 200, writtenPercent: 10 })).toBe(false);
          expect(replica.freePagesLeft()).toBe(0);
          expect(freePages(replica.dir)).toBe(0);
        },
        { timeout: 20_000, interval: 50 },
      );
      expect(errors).not.toHaveBeenCalled();
    } finally {
      await steps.stop();
    }
  });

  it("merge top-k lists whole in the serving loop's steps only once writes pause", async () => {
    const replica = openReplica();
    const feed = load(replica, 2_000, 20);
    mergeAll(replica);
    for (let steps = 0; replica.topkMergeStep(0, 10) !== null; steps++) {
      expect(steps).toBeLessThan(STEPS_MAX);
    }
    const policy = { quietMs: 1_500, writtenPercent: 10 };
    const wholeSteps = vi.spyOn(replica, 'topkMergeStep');
    const wholeCalls = () => wholeSteps.mock.calls.filter(([, percent]) => percent !== undefined);
    const steps = new BackgroundSteps({
      replica: () => replica,
      stepDocsMax: 50,
      stepMsMax: 10,
      retryMsMax: 5_000,
      merges: { ...policy, stepMsMax: 5 },
      paused: () => null,
      onSwapped: () => undefined,
      logger: createLogger('test', 'silent'),
    });
    try {
      // Applies far more often than the quiet time, each new postings for lists of several
      // segments (too few for an FTS5 merge): no step may merge a list whole meanwhile.
      for (let write = 0; write < 10; write++) {
        feed.apply('docs', 0, [[`w${write}`, doc(write)]]);
        steps.kick();
        await new Promise((resolve) => setTimeout(resolve, 50));
        expect(replica.topkMergesDue(policy)).toBe(true);
      }
      expect(wholeCalls()).toEqual([]);
      await vi.waitFor(() => expect(replica.topkMergesDue(policy)).toBe(false), {
        timeout: 20_000,
        interval: 50,
      });
      expect(wholeCalls().length).toBeGreaterThan(0);
    } finally {
      await steps.stop();
    }
  });

  it('are counted for the status, as are top-k merges due, until steps have taken them', () => {
    const replica = openReplica();
    const policy = { quietMs: 0, writtenPercent: 10 };
    load(replica, 2_000, 20);
    expect(replica.topkMergesDue(policy)).toBe(true);
    for (let steps = 0; replica.topkMergeStep(0, policy.writtenPercent) !== null; steps++) {
      expect(steps).toBeLessThan(STEPS_MAX);
    }
    expect(replica.topkMergesDue(policy)).toBe(false);
    mergeAll(replica);
    replica.flush();
    expect(replica.freePagesLeft()).toBeGreaterThan(10);
    expect(replica.freePagesLeft()).toBe(freePages(replica.dir));
    giveBackAll(replica);
    expect(replica.freePagesLeft()).toBe(0);
  });

  it('count no top-k merge due once a store is opened with another threshold, its lists rebuilt whole', async () => {
    const replica = openReplica();
    load(replica, 2_000, 20);
    const policy = { quietMs: 0, writtenPercent: 10 };
    expect(replica.topkMergesDue(policy)).toBe(true);
    await replica.close();
    replicas.splice(replicas.indexOf(replica), 1);
    const rebuilt = new Replica(replica.dir, {
      topkListedDfMin: DEFAULT_LIMITS.searchTopkListedDfMin / 2,
      walBytesKeptMax: WAL_BYTES_KEPT_MAX,
    });
    replicas.push(rebuilt);
    // Each list is one segment of live rows: the ids the store held before name other terms.
    expect(rebuilt.topkMergesDue(policy)).toBe(false);
  });

  it('wait for writes to pause, as merges do', () => {
    const replica = openReplica();
    load(replica, 1_000, 25);
    mergeAll(replica);
    load(replica, 50, 25);
    const step = replica.freePagesStep(0, { quietMs: 60_000, writtenPercent: 0 });
    expect(step).toHaveProperty('waitMs');
    expect((step as { waitMs: number }).waitMs).toBeGreaterThan(50_000);
  });

  it('leave a store created without them as it was: opened, read, nothing given back', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'free-pages-'));
    dirs.push(dir);
    // As every build before created its store: auto_vacuum NONE, fixed by the first table.
    const old = new Database(join(dir, SEARCH_FILE));
    old.pragma('journal_mode = WAL');
    old.exec(
      'CREATE TABLE IF NOT EXISTS checkpoints (topic TEXT NOT NULL, partition INTEGER NOT NULL, applied INTEGER NOT NULL, PRIMARY KEY (topic, partition)) WITHOUT ROWID',
    );
    old.close();
    const replica = openReplica(dir);
    load(replica, 1_000, 25);
    mergeAll(replica);
    replica.flush();
    expect(freePages(dir)).toBeGreaterThan(0);
    expect(replica.freePagesStep(0, AT_ONCE)).toBeNull();
    const reference = openReplica();
    load(reference, 1_000, 25);
    mergeAll(reference);
    expect(answers(replica)).toEqual(answers(reference));
  });

  it('leave the WAL file empty once a flush finds the store idle', () => {
    const replica = openReplica();
    load(replica, 1_000, 100);
    const walBytes = () => statSync(join(replica.dir, SEARCH_FILE + WAL_SUFFIX)).size;
    const before = answers(replica);
    replica.flush();
    // A checkpoint of commits just made leaves the WAL file as long as they made it.
    expect(walBytes()).toBeGreaterThan(0);
    replica.flush();
    expect(walBytes()).toBe(0);
    expect(answers(replica)).toEqual(before);
  });

  // A step that answers to wait for writes to pause commits nothing: with the store flushed, the
  // next flush finds it idle and empties the WAL.
  const waits = [
    // A load's segments, due a merge.
    { name: 'mergeStep', prepare: (replica: Replica) => load(replica, 1_000, 25) },
    // Pages a merge freed, and writes after it.
    {
      name: 'freePagesStep',
      prepare: (replica: Replica) => {
        load(replica, 1_000, 25);
        mergeAll(replica);
        load(replica, 50, 25);
      },
    },
  ] as const;
  for (const { name, prepare } of waits) {
    it(`leave the store idle when ${name} answers to wait: the next flush empties the WAL`, () => {
      const replica = openReplica();
      prepare(replica);
      replica.flush();
      const walBytes = () => statSync(join(replica.dir, SEARCH_FILE + WAL_SUFFIX)).size;
      expect(walBytes()).toBeGreaterThan(0);
      const step = replica[name](0, { quietMs: 60_000, writtenPercent: 0 });
      expect(step).toHaveProperty('waitMs');
      replica.flush();
      expect(walBytes()).toBe(0);
    });
  }

  it('leave the store idle when whole top-k merges find nothing to rewrite: the next flush empties the WAL', () => {
    const replica = openReplica();
    const feed = load(replica, 2_000, 20);
    mergeAll(replica);
    for (let steps = 0; replica.topkMergeStep(0, 10) !== null; steps++) {
      expect(steps).toBeLessThan(STEPS_MAX);
    }
    // A posting more for lists of 1,000 and more: far under 10% of their largest segments.
    feed.apply('docs', 0, [['after', doc(1)]]);
    replica.flush();
    const walBytes = () => statSync(join(replica.dir, SEARCH_FILE + WAL_SUFFIX)).size;
    expect(walBytes()).toBeGreaterThan(0);
    expect(replica.topkMergesDue({ quietMs: 0, writtenPercent: 10 })).toBe(true);
    for (let steps = 0; replica.topkMergeStep(0, 10) !== null; steps++) {
      expect(steps).toBeLessThan(STEPS_MAX);
    }
    replica.flush();
    expect(walBytes()).toBe(0);
  });

  it('leave the WAL file at its bound once it starts over', () => {
    const replica = openReplica();
    const feed = load(replica, 2_000, 500);
    const walBytes = () => statSync(join(replica.dir, SEARCH_FILE + WAL_SUFFIX)).size;
    expect(walBytes()).toBeGreaterThan(WAL_BYTES_KEPT_MAX * 4);
    // The commit that starts the WAL over cuts it back to the bound (its own frames are fewer).
    replica.flush();
    feed.apply('docs', 0, [['after', doc(1)]]);
    expect(walBytes()).toBeLessThanOrEqual(WAL_BYTES_KEPT_MAX);
  });
});
