// kill -9 in the middle of a segment merge (serve-node/segment-merges.ts): a child process opens a
// replica whose table holds many FTS5 segments and merges them a command a step, and is killed
// after a few steps have committed. The store it leaves passes FTS5's integrity check, answers
// every search exactly as before the merge, and the merge goes on from where it stopped to one
// segment, answers unchanged. The same for the steps that give the merge's free pages back
// (serve-node/free-pages.ts): killed midway, the file passes SQLite's and FTS5's integrity checks,
// answers as before, and the steps go on to no free page. The child runs dist/ (built by the test
// setup); the replica is real (LMDB and SQLite in a temp dir).
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { parseQuery } from '../../serve-node/fts-query.js';
import { Replica } from '../../serve-node/replica.js';
import { ftsSegments, ftsTableOf, ReplicaFeed, replicaSqlite, tempDir } from '../harness/index.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const WORDS = ['north', 'south', 'east', 'west', 'river', 'stone', 'cedar', 'maple', 'harbor'];
const PARTITIONS = [0, 1];
/** Steps the child commits before it is killed: the merge has begun and is far from done. */
const STEPS_BEFORE_KILL = 3;
/** The wait for those steps, past which the test fails. */
const CHILD_WAIT_MS_MAX = 30_000;
const AT_ONCE = { quietMs: 0, writtenPercent: 0 };

const dirs: Array<{ cleanup(): void }> = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) dir.cleanup();
});

/**
 * Loads `docs` documents into a replica at `dir`, 20 a transaction (a segment each), then deletes
 * the first `deleted` of them, closed.
 */
async function load(dir: string, docs: number, deleted = 0): Promise<void> {
  const replica = new Replica(dir);
  const feed = new ReplicaFeed(() => replica);
  feed.settings('docs', { filterable: ['n'] });
  for (let i = 0; i < docs; i += 20) {
    const records: Array<[string, unknown]> = [];
    for (let j = i; j < i + 20; j++) {
      // The named words and a vocabulary of 5,000 more, so the index spans many pages.
      const words = Array.from({ length: 40 }, (_, k) =>
        k % 4 === 0
          ? WORDS[(j * 5 + k * k) % WORDS.length]
          : `w${(j * 7919 + k * 104_729) % 5_000}`,
      );
      records.push([`k${j}`, { title: `doc ${j}`, body: words.join(' '), n: j % 10 }]);
    }
    feed.apply('docs', (i / 20) % PARTITIONS.length, records);
  }
  for (let i = 0; i < deleted; i += 20) {
    const records: Array<[string, null]> = [];
    for (let j = i; j < i + 20; j++) records.push([`k${j}`, null]);
    feed.apply('docs', (i / 20) % PARTITIONS.length, records);
  }
  await replica.close();
}

function answers(replica: Replica) {
  const limits = { queryBytesMax: 1024, queryTermsMax: 32 };
  return ['river', 'cedar OR harbor', '"north south"', 'ma*', 'doc'].map((q) =>
    replica.search.search('docs', PARTITIONS, parseQuery(q, limits), 50, 100_000),
  );
}

/** FTS5's own check of its index structure: throws SQLITE_CORRUPT_VTAB when it finds a fault. */
function integrityCheck(replica: Replica): void {
  const table = ftsTableOf(replica, 'docs');
  replicaSqlite(replica)
    .prepare(`INSERT INTO ${table} (${table}, rank) VALUES ('integrity-check', 0)`)
    .run();
}

/**
 * Opens the replica in a child that merges (or gives free pages back) a command a step, one step
 * each time the parent says so on its stdin, and kill -9s it once STEPS_BEFORE_KILL steps have
 * committed: the kill comes between steps, at a point the parent chose, whatever the machine's
 * speed.
 */
async function stepAndKill(dir: string, kind: 'merge' | 'free pages'): Promise<void> {
  const replicaJs = path.join(ROOT, 'dist/serve-node/replica.js');
  const step =
    kind === 'merge'
      ? `replica.mergeStep(0, ${JSON.stringify(AT_ONCE)})`
      : `replica.freePagesStep(0, ${JSON.stringify(AT_ONCE)})`;
  const done = kind === 'merge' ? 'step.merged.finished' : 'step.finished';
  const script = `
    const { createInterface } = await import('node:readline');
    const { Replica } = await import(${JSON.stringify(replicaJs)});
    const replica = new Replica(${JSON.stringify(dir)});
    let steps = 0;
    for await (const _ of createInterface({ input: process.stdin })) {
      const step = ${step};
      if (step === null || ${done}) { console.log('finished'); break; }
      console.log('step ' + ++steps);
    }`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT });
  let output = '';
  const exited = new Promise<NodeJS.Signals | null>((resolve) =>
    child.on('exit', (_code, signal) => resolve(signal)),
  );
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no ${kind} steps: ${output}`)),
      CHILD_WAIT_MS_MAX,
    );
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('finished')) reject(new Error(`the ${kind} finished first: ${output}`));
      if ([...output.matchAll(/step \d+/g)].length < STEPS_BEFORE_KILL) {
        child.stdin.write('step\n');
        return;
      }
      clearTimeout(timer);
      child.kill('SIGKILL');
      resolve();
    });
    child.stdin.write('step\n');
  });
  expect(await exited).toBe('SIGKILL');
}

describe('a segment merge killed with kill -9', () => {
  it('leaves a sound index with the same answers, and the merge goes on', async () => {
    const dir = tempDir('merge-kill');
    dirs.push(dir);
    await load(dir.path, 3_000);
    const reference = new Replica(dir.path);
    const before = answers(reference);
    const segmentsBefore = ftsSegments(reference, 'docs');
    expect(segmentsBefore).toBeGreaterThan(3);
    await reference.close();

    await stepAndKill(dir.path, 'merge');

    const replica = new Replica(dir.path);
    try {
      integrityCheck(replica);
      expect(answers(replica)).toEqual(before);
      // The kill came mid-merge: it was not done.
      expect(ftsSegments(replica, 'docs')).toBeGreaterThan(1);
      while (replica.mergeStep(10, AT_ONCE) !== null);
      expect(ftsSegments(replica, 'docs')).toBe(1);
      integrityCheck(replica);
      expect(answers(replica)).toEqual(before);
    } finally {
      await replica.close();
    }
  });

  it('leaves a sound file with the same answers when it gives free pages back, and the steps go on', async () => {
    const dir = tempDir('free-pages-kill');
    dirs.push(dir);
    // Most documents deleted, so their rows' pages, amid the file, are free once merged.
    await load(dir.path, 4_000, 3_000);
    const reference = new Replica(dir.path);
    while (reference.mergeStep(10, AT_ONCE) !== null);
    const before = answers(reference);
    await reference.close();

    await stepAndKill(dir.path, 'free pages');

    const replica = new Replica(dir.path);
    try {
      expect(replicaSqlite(replica).pragma('integrity_check', { simple: true })).toBe('ok');
      integrityCheck(replica);
      expect(answers(replica)).toEqual(before);
      // The kill came midway: pages were still free.
      expect(replicaSqlite(replica).pragma('freelist_count', { simple: true })).toBeGreaterThan(0);
      while (replica.freePagesStep(10, AT_ONCE) !== null);
      expect(replicaSqlite(replica).pragma('freelist_count', { simple: true })).toBe(0);
      expect(replicaSqlite(replica).pragma('integrity_check', { simple: true })).toBe('ok');
      expect(answers(replica)).toEqual(before);
    } finally {
      await replica.close();
    }
  });
});
