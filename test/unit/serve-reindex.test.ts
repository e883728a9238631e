// Proves the background re-index after a settings change (serve-node/table-builds.ts): the
// collection answers with its previous settings until the last step, progress is reported as
// steps go, writes and deletes between steps (of keys already copied and of keys not yet) end
// up exactly as in a replica that applied the same log at once, a settings change during a
// build restarts or drops it, and a build interrupted by closing the stores resumes where its
// last step committed. The replicas are real (LMDB and SQLite in temp dirs), fed through their
// apply path.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { FilterNode } from '../../shared/filter/ast.js';
import { createLogger } from '../../shared/logger.js';
import { SETTINGS_TOPIC } from '../../shared/topics.js';
import { parseQuery } from '../../serve-node/fts-query.js';
import { prepareRecord } from '../../serve-node/prepared-record.js';
import { BackgroundSteps } from '../../serve-node/background-steps.js';
import { Replica } from '../../serve-node/replica.js';
import { StepView } from '../../serve-node/step-view.js';
import { seededRandom, testSeed } from '../harness/random.js';
import { ReplicaFeed, replicaSqlite } from '../harness/replica-feed.js';

const PARTITIONS = [0, 1, 2];
const WORDS = ['apple', 'banana', 'cherry', 'damson', 'elder'];
const SETTINGS = [
  { searchable: ['title', 'body'], weights: { title: 4 }, filterable: ['n'], sortable: ['n'] },
  { searchable: ['body'], filterable: ['n', 'tag'] },
  { searchable: ['title'], tokenizer: 'trigram', filterable: ['tag'] },
];

const fedReplicas: Fed[] = [];
afterEach(async () => {
  for (const fed of fedReplicas.splice(0)) {
    await fed.replica.close();
    rmSync(fed.dir, { recursive: true, force: true });
  }
});

/** A replica in a temp dir, and the log positions it has been fed to. */
class Fed {
  readonly dir: string;
  replica: Replica;
  readonly feed = new ReplicaFeed(() => this.replica);

  constructor() {
    this.dir = mkdtempSync(join(tmpdir(), 'reindex-'));
    this.replica = new Replica(this.dir);
    fedReplicas.push(this);
  }

  /** Appends records of one topic-partition as one batch at its next offset, and applies it. */
  apply(topic: string, partition: number, records: Array<[string, unknown]>): void {
    this.feed.apply(topic, partition, records);
  }

  settings(value: unknown): void {
    this.feed.settings('docs', value);
  }

  /** Every step left, as the serve-node's background steps take them. */
  finish(stepDocs = 3): void {
    while (this.replica.reindexStep(stepDocs) !== null);
  }

  async reopen(): Promise<void> {
    await this.replica.close();
    this.replica = new Replica(this.dir);
  }
}

const query = parseQuery('apple OR banana OR cherry OR damson', {
  queryBytesMax: 1024,
  queryTermsMax: 32,
});
const filterN: FilterNode = {
  kind: 'compare',
  field: 'n',
  op: '>=',
  value: { text: '3', number: 3 },
};

/** What a replica answers: ranked hits with exact scores, a filtered search, facets, settings. */
function answers(replica: Replica) {
  const { search } = replica;
  const settings = search.settingsOf('docs');
  const filterable = settings.filterable ?? [];
  return {
    settings,
    ranked: search.search('docs', PARTITIONS, query, 1000, 10_000),
    filtered: filterable.includes('n')
      ? search.search('docs', PARTITIONS, query, 1000, 10_000, { filter: filterN, sort: [] })
      : null,
    facets: Object.fromEntries(search.facets('docs', PARTITIONS, query, null, filterable)),
  };
}

function randomDoc(random: ReturnType<typeof seededRandom>) {
  const words = (n: number) => Array.from({ length: n }, () => random.pick(WORDS)).join(' ');
  return {
    title: words(random.int(1, 3)),
    body: words(random.int(0, 6)),
    n: random.int(0, 6),
    tag: random.pick(['x', 'y']),
  };
}

describe('re-index after a settings change', () => {
  it('answers with the old settings until the last step, reporting progress', () => {
    const fed = new Fed();
    fed.settings(SETTINGS[0]);
    fed.apply(
      'docs',
      0,
      Array.from({ length: 10 }, (_, i) => [
        `k${i}`,
        { title: 'apple', body: `banana ${i}`, n: i },
      ]),
    );
    const { replica } = fed;
    const before = answers(replica);
    fed.settings(SETTINGS[1]);
    expect(replica.applied(SETTINGS_TOPIC, 0)).toBe(2);
    // The record is applied, not in effect: reads that need it wait.
    expect(replica.settingsApplied('docs')).toBe(1);
    expect(replica.reindexing()).toEqual([
      { collection: 'docs', settingsOffset: 1, copied: 0, documents: 10 },
    ]);
    const copied: number[] = [];
    for (;;) {
      expect(answers(replica)).toEqual(before);
      const step = replica.reindexStep(3);
      expect(step).not.toBeNull();
      if (step!.swapped) break;
      copied.push(replica.reindexing()[0].copied);
    }
    expect(copied).toEqual([3, 6, 9]);
    expect(replica.reindexing()).toEqual([]);
    expect(replica.settingsApplied('docs')).toBe(2);
    expect(replica.search.settingsOf('docs').searchable).toEqual(['body']);
    expect(replica.reindexStep(3)).toBeNull();
  });

  it('ends a step after the document that takes it past its time, copying at least one', () => {
    const fed = new Fed();
    fed.apply(
      'docs',
      0,
      Array.from({ length: 5 }, (_, i): [string, unknown] => [`k${i}`, { title: 'elder', n: i }]),
    );
    fed.settings(SETTINGS[1]);
    const copied: number[] = [];
    // No time at all: one document a step, and a step that finds none left swaps.
    for (;;) {
      const step = fed.replica.reindexStep(100, 0);
      if (step!.swapped) break;
      copied.push(fed.replica.reindexing()[0].copied);
    }
    expect(copied).toEqual([1, 2, 3, 4, 5]);
    expect(fed.replica.search.settingsOf('docs').searchable).toEqual(['body']);
  });

  it('ends as a replica that applied the same log at once, whatever writes come between steps', () => {
    const seed = testSeed('reindex writes between steps');
    const random = seededRandom(seed);
    const fed = new Fed();
    // The same log, applied in one go at the end (every write, then the settings).
    const log: Array<
      { partition: number; records: Array<[string, unknown]> } | { settings: unknown }
    > = [];
    const write = (records: Array<[string, unknown]>) => {
      const partition = random.pick(PARTITIONS);
      fed.apply('docs', partition, records);
      log.push({ partition, records });
    };
    const keys = Array.from({ length: 40 }, (_, i) => `key-${String(i).padStart(2, '0')}`);
    for (const key of keys) write([[key, randomDoc(random)]]);
    for (let round = 0; round < 3; round++) {
      const settings = SETTINGS[(round + 1) % SETTINGS.length];
      fed.settings(settings);
      log.push({ settings });
      // Steps of 1 to 7 documents, each followed by writes: updates and deletes on both sides of
      // the build's last key, new keys, a key deleted then written again.
      while (fed.replica.reindexing().length > 0) {
        const step = fed.replica.reindexStep(random.int(1, 7));
        expect(step).not.toBeNull();
        for (let w = random.int(0, 3); w > 0; w--) {
          const key = random.next() < 0.2 ? `new-${random.int(0, 30)}` : random.pick(keys);
          write([[key, random.next() < 0.3 ? null : randomDoc(random)]]);
        }
      }
      const whole = new Fed();
      for (const entry of log) {
        if ('settings' in entry) whole.settings(entry.settings);
        else whole.apply('docs', entry.partition, entry.records);
        whole.finish(1000);
      }
      expect(answers(fed.replica)).toEqual(answers(whole.replica));
    }
  });

  it('restarts a build when the settings change again, and drops it when they change back', () => {
    const fed = new Fed();
    fed.settings(SETTINGS[0]);
    fed.apply(
      'docs',
      1,
      Array.from({ length: 8 }, (_, i) => [`k${i}`, { title: 'cherry', n: i }]),
    );
    const first = answers(fed.replica);
    fed.settings(SETTINGS[1]);
    fed.replica.reindexStep(3);
    fed.settings(SETTINGS[2]);
    // Still the first record not in effect: reads after it keep waiting.
    expect(fed.replica.reindexing()).toEqual([
      { collection: 'docs', settingsOffset: 1, copied: 0, documents: 8 },
    ]);
    fed.replica.reindexStep(3);
    fed.settings(SETTINGS[0]);
    expect(fed.replica.reindexing()).toEqual([]);
    expect(fed.replica.settingsApplied('docs')).toBe(4);
    expect(answers(fed.replica)).toEqual(first);
    // The abandoned tables are gone: one table for the collection is left.
    const db = (fed.replica.search as unknown as { db: import('better-sqlite3').Database }).db;
    expect(db.prepare('SELECT count(*) FROM fts_tables').pluck().get()).toBe(1);
    const virtualTables =
      "SELECT count(*) FROM sqlite_schema WHERE sql LIKE 'CREATE VIRTUAL TABLE%'";
    expect(db.prepare(virtualTables).pluck().get()).toBe(1);
  });

  it('resumes an interrupted build from its last committed step', async () => {
    const docs = Array.from({ length: 9 }, (_, i): [string, unknown] => [
      `k${i}`,
      { body: `damson ${i}`, n: i },
    ]);
    const writes: Array<[string, unknown]> = [
      ['k1', { body: 'apple', n: 7 }],
      // The last key the step copied: it is in the new table, so the write goes there too.
      ['k3', { body: 'cherry', n: 1 }],
      ['k8', null],
    ];
    const fed = new Fed();
    fed.apply('docs', 2, docs);
    fed.settings(SETTINGS[1]);
    fed.replica.reindexStep(4);
    fed.apply('docs', 2, writes);
    await fed.reopen();
    expect(fed.replica.reindexing()).toMatchObject([{ collection: 'docs', copied: 4 }]);
    expect(fed.replica.settingsApplied('docs')).toBe(0);
    fed.finish();
    const whole = new Fed();
    whole.apply('docs', 2, docs);
    whole.apply('docs', 2, writes);
    whole.settings(SETTINGS[1]);
    whole.finish();
    expect(answers(fed.replica)).toEqual(answers(whole.replica));
  });
});

describe('re-index after a settings change: failures and restarts', () => {
  it('takes no step while LMDB has no checkpoint of a partition the search store applied', () => {
    const a: [string, unknown] = ['a', { body: 'apple', n: 1 }];
    const b: [string, unknown] = ['b', { body: 'banana', n: 5 }];
    const fed = new Fed();
    fed.apply('docs', 0, [a]);
    fed.settings(SETTINGS[1]);
    // Partition 1's first answer: the search store commits it, LMDB's commit then fails (the
    // fetcher retries the answer); at a restart the node would rebuild, but it goes on running.
    const [key, value] = b;
    const record = { key, value: Buffer.from(JSON.stringify(value)), timestampMs: 1, offset: 0 };
    fed.replica.search.applyMany(
      [{ topic: 'docs', partition: 1, records: [prepareRecord(record, 'docs', 1)], nextOffset: 1 }],
      new StepView(fed.replica.docs),
    );
    // Copying from LMDB now would miss `b`.
    expect(fed.replica.reindexStep(10)).toBeNull();
    // The retried answer catches LMDB up; the re-index then ends with `b` in the new table.
    fed.apply('docs', 1, [b]);
    fed.finish();
    const whole = new Fed();
    whole.apply('docs', 0, [a]);
    whole.apply('docs', 1, [b]);
    whole.settings(SETTINGS[1]);
    whole.finish();
    expect(answers(fed.replica)).toEqual(answers(whole.replica));
  });

  it('goes on after a failed step without waiting for another applied answer', async () => {
    const fed = new Fed();
    fed.apply(
      'docs',
      0,
      Array.from({ length: 400 }, (_, i): [string, unknown] => [
        `k${i}`,
        { title: `apple ${i}`, body: `banana cherry ${i} `.repeat(20), n: i },
      ]),
    );
    fed.settings(SETTINGS[1]);
    // The disk is full: the search store cannot grow, so a step fails and rolls back.
    const db = replicaSqlite(fed.replica);
    db.pragma(`max_page_count = ${db.pragma('page_count', { simple: true }) as number}`);
    const swapped: string[] = [];
    const logger = createLogger('test', 'silent');
    const errors = vi.spyOn(logger, 'error');
    const steps = new BackgroundSteps({
      replica: () => fed.replica,
      stepDocsMax: 50,
      stepMsMax: 10,
      retryMsMax: 5_000,
      merges: { quietMs: 1_000, writtenPercent: 10, stepMsMax: 10 },
      paused: () => null,
      onSwapped: (collection) => swapped.push(collection),
      logger,
    });
    try {
      steps.kick();
      await vi.waitFor(() => expect(errors).toHaveBeenCalled(), { timeout: 5_000, interval: 10 });
      expect(swapped).toEqual([]);
      expect(fed.replica.reindexing()).toHaveLength(1);
      // Room again. Nothing more is written to the log (an idle collection): no applied answer
      // comes to start the loop, yet the re-index ends, and a read waiting for it can go.
      db.pragma('max_page_count = 1073741823');
      await vi.waitFor(() => expect(swapped).toEqual(['docs']), { timeout: 10_000, interval: 50 });
      expect(fed.replica.search.settingsOf('docs').searchable).toEqual(['body']);
    } finally {
      await steps.stop();
    }
  });

  it('reports the documents of a build started after another was dropped', () => {
    const fed = new Fed();
    const docs = (prefix: string, n: number) =>
      Array.from({ length: n }, (_, i): [string, unknown] => [`${prefix}${i}`, { title: 'apple' }]);
    fed.apply('docs', 0, docs('k', 4));
    fed.settings(SETTINGS[1]);
    expect(fed.replica.reindexing()).toMatchObject([{ settingsOffset: 0, documents: 4 }]);
    // Back to the current settings: the build and its table are dropped.
    fed.settings(null);
    expect(fed.replica.reindexing()).toEqual([]);
    fed.apply('docs', 0, docs('m', 6));
    fed.settings(SETTINGS[2]);
    expect(fed.replica.reindexing()).toEqual([
      { collection: 'docs', settingsOffset: 2, copied: 0, documents: 10 },
    ]);
  });

  it('equals a replica that applied the settings first, through writes, steps and crashes', async () => {
    const seed = testSeed('reindex against settings first');
    const random = seededRandom(seed);
    const fed = new Fed();
    type Entry = { topic: string; partition: number; records: Array<[string, unknown]> };
    const log: Entry[] = [];
    // Each key lives in one partition, as the gateway's partitioner puts it.
    const keys = Array.from({ length: 24 }, (_, i) => `key-${String(i).padStart(2, '0')}`);
    const partitionOf = (key: string) => keys.indexOf(key) % PARTITIONS.length;
    const settingsChoices = [...SETTINGS, null];
    for (let i = 0; i < 150; i++) {
      let entry: Entry;
      if (random.next() < 0.06) {
        entry = {
          topic: SETTINGS_TOPIC,
          partition: 0,
          records: [['docs', random.pick(settingsChoices)]],
        };
      } else {
        const partition = random.pick(PARTITIONS);
        const own = keys.filter((key) => partitionOf(key) === partition);
        const records = Array.from({ length: random.int(1, 4) }, (): [string, unknown] => [
          random.pick(own),
          random.next() < 0.25 ? null : randomDoc(random),
        ]);
        entry = { topic: 'docs', partition, records };
      }
      log.push(entry);
      if (entry.topic !== SETTINGS_TOPIC && random.next() < 0.1) {
        // A crash between the two commits: the search store has the answer, LMDB does not;
        // the restarted node takes no step on stale documents and gets the answer again.
        const at = fed.feed.nextOffset('docs', entry.partition);
        if (at !== undefined) {
          const prepared = entry.records.map(([key, value], j) =>
            prepareRecord(
              {
                key,
                value: value === null ? null : Buffer.from(JSON.stringify(value)),
                timestampMs: 1,
                offset: at + j,
              },
              'docs',
              entry.partition,
            ),
          );
          fed.replica.search.applyMany(
            [
              {
                topic: 'docs',
                partition: entry.partition,
                records: prepared,
                nextOffset: at + prepared.length,
              },
            ],
            new StepView(fed.replica.docs),
          );
          await fed.reopen();
          fed.replica.reindexStep(random.int(1, 3));
        }
      }
      fed.apply(entry.topic, entry.partition, entry.records);
      if (random.next() < 0.5) fed.replica.reindexStep(random.int(1, 4));
    }
    fed.finish();
    const settingsFirst = new Fed();
    for (const entry of log.filter((e) => e.topic === SETTINGS_TOPIC)) {
      settingsFirst.apply(entry.topic, entry.partition, entry.records);
    }
    settingsFirst.finish();
    for (const entry of log.filter((e) => e.topic !== SETTINGS_TOPIC)) {
      settingsFirst.apply(entry.topic, entry.partition, entry.records);
    }
    expect(settingsFirst.replica.reindexing()).toEqual([]);
    expect(answers(fed.replica)).toEqual(answers(settingsFirst.replica));
  });

  it('deletes the rows a replaced table left in the shared tables, a chunk at a time', () => {
    const fed = new Fed();
    fed.settings(SETTINGS[0]);
    fed.apply(
      'docs',
      1,
      Array.from({ length: 1_100 }, (_, i): [string, unknown] => [
        `k${i}`,
        { title: 'banana', n: i % 7, tag: i % 2 === 0 ? 'x' : 'y' },
      ]),
    );
    // Rewritten: 'banana' (in 1,100 rows) is listed, so each old version is a removed row there.
    fed.apply(
      'docs',
      1,
      Array.from({ length: 10 }, (_, i): [string, unknown] => [
        `k${i}`,
        { title: 'banana', n: 7, tag: 'x' },
      ]),
    );
    const db = (fed.replica.search as unknown as { db: import('better-sqlite3').Database }).db;
    const SHARED = ['doc_rows', 'field_values', 'field_flags', 'sort_values', 'topk_removed'];
    const count = (sql: string, tableId: number) => db.prepare(sql).pluck().get(tableId) as number;
    const TOPK_BY_TERM = ['topk_segments', 'topk_blocks'];
    const rowsOf = (tableId: number) =>
      SHARED.reduce(
        (n, name) => n + count(`SELECT count(*) FROM ${name} WHERE table_id = ?`, tableId),
        count('SELECT count(*) FROM topk_terms WHERE table_id = ?', tableId),
      ) +
      TOPK_BY_TERM.reduce(
        (n, name) =>
          n +
          count(
            `SELECT count(*) FROM ${name} WHERE term_id IN ` +
              '(SELECT id FROM topk_terms WHERE table_id = ?)',
            tableId,
          ),
        0,
      );
    const old = db.prepare('SELECT table_id FROM collection_tables').pluck().get() as number;
    const oldRows = rowsOf(old);
    expect(oldRows).toBeGreaterThan(3_000);
    expect(count('SELECT count(*) FROM topk_removed WHERE table_id = ?', old)).toBe(10);
    fed.settings(SETTINGS[1]);
    fed.finish(2_000);
    const answered = answers(fed.replica);
    // The swap dropped the FTS5 table; its shared rows wait for the steps after it.
    expect(rowsOf(old)).toBe(oldRows);
    let steps = 0;
    while (fed.replica.retiredRowsStep(0) !== null) steps += 1;
    // No time at all: one chunk (1,000 rows) a step, so several steps.
    expect(steps).toBeGreaterThan(3);
    expect(rowsOf(old)).toBe(0);
    expect(db.prepare('SELECT count(*) FROM retired_tables').pluck().get()).toBe(0);
    expect(answers(fed.replica)).toEqual(answered);
  });

  it('gives a new table an id no retired table whose rows remain has', () => {
    const fed = new Fed();
    const docs = Array.from({ length: 6 }, (_, i): [string, unknown] => [
      `k${i}`,
      { title: 'apple', body: 'cherry', n: 5 },
    ]);
    const later: Array<[string, unknown]> = [['k2', null]];
    fed.apply('docs', 0, docs);
    // A build copies k0..k2 (n = 5) and is given up: its table, the newest, is retired.
    fed.settings(SETTINGS[0]);
    fed.replica.reindexStep(3);
    fed.settings(null);
    fed.apply('docs', 0, later);
    fed.settings({ searchable: ['body'], filterable: ['n'] });
    fed.finish();
    const whole = new Fed();
    whole.apply('docs', 0, docs);
    whole.apply('docs', 0, later);
    whole.settings({ searchable: ['body'], filterable: ['n'] });
    whole.finish();
    // Had the new table taken the retired id, its rows of the deleted k2 would be found.
    const scan = (replica: Replica) =>
      replica.search
        .scanKeys('docs', {
          partitions: PARTITIONS,
          filter: filterN,
          sort: [],
          limit: 100,
        })
        .map((found) => found.key);
    expect(scan(fed.replica)).toEqual(['k0', 'k1', 'k3', 'k4', 'k5']);
    expect(scan(fed.replica)).toEqual(scan(whole.replica));
    expect(answers(fed.replica)).toEqual(answers(whole.replica));
  });
});
