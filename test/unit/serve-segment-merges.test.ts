// Proves the merging of a table's FTS5 segments (serve-node/segment-merges.ts): a table loaded in
// many transactions holds many segments, and merge steps leave it one, with every answer (hits,
// exact scores, totals, filters, facets) as before; a merge waits for writes to pause, and is due
// again only once the set share of the table has been written; each step is bounded in time; a
// table dropped by a re-index is never merged; and the serve-node's background loop merges an
// idle table without any applied answer to start it. Real replicas (LMDB and SQLite in temp dirs),
// fed through their apply path.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../shared/logger.js';
import { BackgroundSteps } from '../../serve-node/background-steps.js';
import { parseQuery } from '../../serve-node/fts-query.js';
import { Replica } from '../../serve-node/replica.js';
import { ftsSegments } from '../harness/replica-feed.js';
import { answers, doc, limits, load, PARTITIONS, SETTINGS } from '../harness/segment-corpus.js';

/** Merge at once, whatever was written: the tests choose when writes happen. */
const AT_ONCE = { quietMs: 0, writtenPercent: 0 };

const dirs: string[] = [];
const replicas: Replica[] = [];
afterEach(async () => {
  for (const replica of replicas.splice(0)) await replica.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function openReplica(dir = mkdtempSync(join(tmpdir(), 'merges-'))): Replica {
  if (!dirs.includes(dir)) dirs.push(dir);
  const replica = new Replica(dir);
  replicas.push(replica);
  return replica;
}

/** Merge steps until the table is merged: the steps taken. */
function mergeAll(replica: Replica, stepMsMax: number): number {
  let steps = 0;
  for (;;) {
    const step = replica.mergeStep(stepMsMax, AT_ONCE);
    if (step === null) return steps;
    expect(step).toHaveProperty('merged');
    steps += 1;
    expect(steps).toBeLessThan(100_000);
  }
}

describe('segment merges', () => {
  it('leave one segment and every answer as it was', () => {
    const replica = openReplica();
    load(replica, 3_000, 25);
    const before = answers(replica);
    expect(ftsSegments(replica, 'docs')).toBeGreaterThan(3);
    expect(replica.mergesDue(AT_ONCE)).toEqual(['docs']);
    const steps = mergeAll(replica, 0);
    // A step of no time runs one command: many steps, each a few pages.
    expect(steps).toBeGreaterThan(1);
    expect(ftsSegments(replica, 'docs')).toBe(1);
    expect(replica.mergesDue(AT_ONCE)).toEqual([]);
    expect(answers(replica)).toEqual(before);
  });

  it('wait for writes to pause', () => {
    const replica = openReplica();
    load(replica, 500, 20);
    const before = ftsSegments(replica, 'docs');
    expect(before).toBeGreaterThan(1);
    const policy = { quietMs: 60_000, writtenPercent: 0 };
    const step = replica.mergeStep(10, policy);
    expect(step).toHaveProperty('waitMs');
    expect((step as { waitMs: number }).waitMs).toBeGreaterThan(50_000);
    expect(replica.mergesDue(policy)).toEqual(['docs']);
    expect(ftsSegments(replica, 'docs')).toBe(before);
  });

  it('are due again once the set share of the table has been written', () => {
    const replica = openReplica();
    const feed = load(replica, 1_000, 50);
    mergeAll(replica, 10);
    const tenth = { quietMs: 0, writtenPercent: 10 };
    const documents = replica.search.search(
      'docs',
      PARTITIONS,
      parseQuery('t*', limits),
      1,
      100_000,
    ).total;
    // Documents written since the merge: one short of a tenth, then the tenth.
    const share = Math.ceil(documents / 10);
    for (let i = 0; i < share - 1; i++) feed.apply('docs', 0, [[`new${i}`, doc(i)]]);
    expect(replica.mergeStep(10, tenth)).toBeNull();
    expect(replica.mergesDue(tenth)).toEqual([]);
    feed.apply('docs', 1, [['last', doc(7)]]);
    expect(replica.mergesDue(tenth)).toEqual(['docs']);
    const before = answers(replica);
    while (replica.mergeStep(10, tenth) !== null);
    expect(ftsSegments(replica, 'docs')).toBe(1);
    expect(answers(replica)).toEqual(before);
  });

  it('are due once for every table after the store opens', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'merges-'));
    const replica = openReplica(dir);
    load(replica, 600, 30);
    mergeAll(replica, 10);
    await replica.close();
    replicas.splice(replicas.indexOf(replica), 1);
    const reopened = openReplica(dir);
    expect(reopened.mergesDue({ quietMs: 0, writtenPercent: 50 })).toEqual(['docs']);
    // Already one segment: the merge finds nothing to do and the table is no longer due.
    expect(reopened.mergeStep(10, { quietMs: 0, writtenPercent: 50 })).toEqual({
      merged: { collection: 'docs', finished: true },
    });
    expect(reopened.mergesDue({ quietMs: 0, writtenPercent: 50 })).toEqual([]);
  });

  it('never merge a table a re-index replaced', () => {
    const replica = openReplica();
    const feed = load(replica, 400, 20);
    feed.settings('docs', { ...SETTINGS, searchable: ['body'] });
    // A merge due during the build waits: re-index steps come first in the loop, and until the
    // build swaps in, the old table is still the one answering.
    while (replica.reindexStep(50) !== null);
    expect(replica.mergesDue(AT_ONCE)).toEqual(['docs']);
    const before = answers(replica);
    mergeAll(replica, 10);
    expect(ftsSegments(replica, 'docs')).toBe(1);
    expect(answers(replica)).toEqual(before);
  });
});

describe('segment merges in the background loop', () => {
  it('merge an idle table once writes pause, with no applied answer to start them', async () => {
    const replica = openReplica();
    load(replica, 1_000, 20);
    expect(ftsSegments(replica, 'docs')).toBeGreaterThan(1);
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
      // The load ended just now: the first look waits for the quiet time, then a timer comes back.
      expect(ftsSegments(replica, 'docs')).toBeGreaterThan(1);
      await vi.waitFor(() => expect(ftsSegments(replica, 'docs')).toBe(1), {
        timeout: 20_000,
        interval: 50,
      });
      expect(replica.mergesDue({ quietMs: 200, writtenPercent: 10 })).toEqual([]);
      expect(errors).not.toHaveBeenCalled();
    } finally {
      await steps.stop();
    }
  });
});
