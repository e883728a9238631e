// Proves the cleaner gives the log-node's thread back while it works: appends sent while a pass
// reads, plans and rewrites a partition of many MB are acknowledged before the pass ends (a pass
// done in one go held every append of the node for all of it: 8-40 s in the 10^7 scale run), and
// a pass cut into slices of 1 ms still compacts to the latest value of every key; and a pass
// over a topic dropped between two of its slices stops there, quietly, leaving no copy behind; and
// a delete-policy topic dropped (and created again) while the pass compacts another is left be; and
// the retention of each partition runs in a turn of its own. The test is about the log-node's own
// store, so it reaches the node by its in-process binding.
import fs from 'node:fs';
import path from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { encodeBatch, type LogRecord } from '../../shared/batch-codec.js';
import type { LogClient } from '../../shared/log-api.js';
import { type FileIO, nodeFileIO } from '../../shared/file-io.js';
import { createLogger, type Logger } from '../../shared/logger.js';
import { openLogNode } from '../../log-node/index.js';
import { readPartition, recordsOf, tempDir } from '../harness/index.js';

const TOPIC = 'slices';
const KEYS = 24_000;
const RECORDS_PER_BATCH = 1_000;
const VALUE_BYTES = 300;
/** Appends sent while the pass runs, at most (each waits for the one before). */
const APPENDS_DURING_PASS_MAX = 10_000;
/** Turns of the event loop a test waits for a pass to reach a phase, at most. */
const TURNS_TO_PHASE_MAX = 1_000_000;

function batchOf(first: number, round: number, timestampMs = Date.now()): Buffer {
  const records: LogRecord[] = Array.from({ length: RECORDS_PER_BATCH }, (_, i) => ({
    key: `k${first + i}`,
    value: Buffer.from(JSON.stringify({ round, pad: '.'.repeat(VALUE_BYTES) })),
    timestampMs,
  }));
  return encodeBatch(records);
}

function openSlicedNode(dataDir: string, extra: { fileIO?: FileIO; logger?: Logger } = {}) {
  return openLogNode({
    dataDir,
    partitions: 1,
    fsync: 'interval',
    segmentBytesMax: 2 * 1024 * 1024,
    batchBytesMax: 1024 * 1024,
    cleanerIntervalMs: 3_600_000,
    cleanerSliceMsMax: 1,
    logger: createLogger('test', 'silent'),
    ...extra,
  });
}

/** Every key twice (~15 MB): the first round's segments are all superseded, so a pass reads the
 * whole partition and rewrites half of it. */
async function fillTwice(client: LogClient): Promise<void> {
  for (const round of [1, 2]) {
    for (let first = 0; first < KEYS; first += RECORDS_PER_BATCH) {
      await client.append(TOPIC, 0, batchOf(first, round));
    }
  }
}

const PAST_RETENTION_CONFIGS = { cleanupPolicy: 'delete', retentionMs: 60_000 } as const;

/** A delete-policy topic of 8 batches (~2.6 MB, a segment rolled) written an hour past retention. */
async function fillPastRetention(client: LogClient, topic: string): Promise<void> {
  await client.ensureTopic(topic, PAST_RETENTION_CONFIGS);
  const hourAgo = Date.now() - 3_600_000;
  for (let first = 0; first < 8 * RECORDS_PER_BATCH; first += RECORDS_PER_BATCH) {
    await client.append(topic, 0, batchOf(first, 0, hourAgo));
  }
}

/** A FileIO that counts into `seen` the reads of TOPIC's segments and the copies opened of them. */
function watchingTopic(seen: Seen): FileIO {
  const topicFds = new Set<number>();
  const partitionDir = path.join('topics', TOPIC, '0');
  return {
    ...nodeFileIO,
    open: (file, flags) => {
      const fd = nodeFileIO.open(file, flags);
      if (file.includes(partitionDir)) topicFds.add(fd);
      if (file.includes(partitionDir) && file.endsWith('.cleaned')) seen.copies++;
      return fd;
    },
    read: (fd, buffer, offset, length, position) => {
      if (topicFds.has(fd)) seen.reads++;
      return nodeFileIO.read(fd, buffer, offset, length, position);
    },
  };
}

/** A logger that keeps what is logged at level error, to check that nothing is. */
function errorLog(): { errors: { msg: string }[]; logger: Logger } {
  const errors: { msg: string }[] = [];
  const stream = { write: (line: string) => void errors.push(JSON.parse(line)) };
  return { errors, logger: pino({ level: 'error' }, stream) };
}

function filesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { recursive: true, encoding: 'utf8' });
}

/** The segment files of a partition's directory, oldest first. */
function segmentNames(partitionDir: string): string[] {
  return fs
    .readdirSync(partitionDir)
    .filter((name) => name.endsWith('.log'))
    .sort();
}

describe('log-node cleaner slices', () => {
  it('acknowledges appends while a pass works through a large partition, and still compacts', async () => {
    const dir = tempDir('cleaner-slices');
    const running = await openSlicedNode(dir.path);
    try {
      const { client } = running;
      await fillTwice(client);
      let passEnded = false;
      const pass = running.cleaner.runOnce().finally(() => {
        passEnded = true;
      });
      let ackedDuringPass = 0;
      let lateAppends = 0;
      for (let i = 0; i < APPENDS_DURING_PASS_MAX && !passEnded; i++) {
        lateAppends++;
        await client.append(
          TOPIC,
          0,
          encodeBatch([{ key: `late${i}`, value: Buffer.from('x'), timestampMs: Date.now() }]),
        );
        if (!passEnded) ackedDuringPass++;
      }
      const summary = (await pass).find((s) => s.topic === TOPIC)!;
      expect(summary.error).toBeUndefined();
      expect(summary.segmentsCompacted, 'the first round compacted').toBeGreaterThan(0);
      expect(ackedDuringPass, 'appends acknowledged while the pass ran').toBeGreaterThanOrEqual(2);

      const latest = new Map<string, unknown>();
      let late = 0;
      for (const record of recordsOf((await readPartition(client, TOPIC, 0)).batches)) {
        if (record.key.startsWith('late')) late++;
        else latest.set(record.key, JSON.parse(Buffer.from(record.value!).toString()).round);
      }
      expect(latest.size).toBe(KEYS);
      for (let k = 0; k < KEYS; k++) expect(latest.get(`k${k}`), `k${k}`).toBe(2);
      expect(late, 'every append sent during the pass is in the log').toBe(lateAppends);
    } finally {
      await running.stop();
      dir.cleanup();
    }
  });

  // The drop closes the partition (its segments retired) and moves its directory away while the
  // pass holds one segment: the pass read on into retired segments (a bad descriptor) or renamed
  // a copy the drop had taken away (ENOENT), and logged "cleaning failed" for a routine drop.
  it.each([
    { phase: 'key scan', reached: (seen: Seen) => seen.reads > 0 },
    { phase: 'rewrite', reached: (seen: Seen) => seen.copies > 0 },
  ])('stops quietly at a topic dropped during its $phase, leaving no copy', async ({ reached }) => {
    const dir = tempDir('cleaner-drop');
    const seen: Seen = { reads: 0, copies: 0 };
    const watching = watchingTopic(seen);
    const { errors, logger } = errorLog();
    const running = await openSlicedNode(dir.path, { fileIO: watching, logger });
    try {
      const { client } = running;
      await fillTwice(client);
      seen.reads = 0;
      let passEnded = false;
      const pass = running.cleaner.runOnce().finally(() => {
        passEnded = true;
      });
      for (let turn = 0; turn < TURNS_TO_PHASE_MAX && !passEnded && !reached(seen); turn++) {
        await nextTurn();
      }
      expect(passEnded, 'the pass was still running when the topic was dropped').toBe(false);
      expect(reached(seen), 'the pass reached the phase').toBe(true);
      await client.deleteTopic(TOPIC);

      const summary = (await pass).find((s) => s.topic === TOPIC);
      expect(summary?.error).toBeUndefined();
      expect(errors, 'nothing logged as an error').toEqual([]);
      expect(filesUnder(dir.path).filter((name) => name.endsWith('.cleaned'))).toEqual([]);
    } finally {
      await running.stop();
      dir.cleanup();
    }
  });
});

// A pass takes its list of partitions when it begins and works through them for as long as the
// compactions before them take: a delete-policy topic dropped meanwhile stayed in the list as a
// closed partition, which keeps its segment list, and retention unlinked `<base>.log` by its path,
// the live segment of the topic created again under the name (base offset 0 again), or logged
// "cleaning failed" when fsyncDir found the dropped directory missing.
describe('log-node cleaner slices, a delete-policy topic dropped during the pass', () => {
  const TIMED = 'timed';
  it.each([{ again: true }, { again: false }])(
    'leaves it be (created again: $again)',
    async ({ again }) => {
      expect(TIMED > TOPIC, 'the pass reaches the timed topic after the compacted one').toBe(true);
      const dir = tempDir('cleaner-drop-timed');
      const seen: Seen = { reads: 0, copies: 0 };
      const { errors, logger } = errorLog();
      const running = await openSlicedNode(dir.path, { fileIO: watchingTopic(seen), logger });
      try {
        const { client } = running;
        await fillPastRetention(client, TIMED);
        const timedDir = path.join(dir.path, 'topics', TIMED, '0');
        expect(segmentNames(timedDir).length, 'a closed segment past retention').toBeGreaterThan(1);
        await fillTwice(client);
        seen.reads = 0;
        let passEnded = false;
        const pass = running.cleaner.runOnce().finally(() => {
          passEnded = true;
        });
        for (let turn = 0; turn < TURNS_TO_PHASE_MAX && !passEnded && seen.reads === 0; turn++) {
          await nextTurn();
        }
        expect(passEnded, 'the pass was still compacting when the topic was dropped').toBe(false);
        await client.deleteTopic(TIMED);
        if (again) {
          await client.ensureTopic(TIMED, PAST_RETENTION_CONFIGS);
          await client.append(TIMED, 0, batchOf(0, 1));
        }
        await pass;

        expect(errors, 'nothing logged as an error').toEqual([]);
        if (again) {
          expect(segmentNames(timedDir), 'the new topic keeps its segment').toEqual([
            `${'0'.repeat(20)}.log`,
          ]);
          const records = recordsOf((await readPartition(client, TIMED, 0)).batches);
          expect(records.length).toBe(RECORDS_PER_BATCH);
        }
      } finally {
        await running.stop();
        dir.cleanup();
      }
    },
  );
});

// Retention is synchronous (unlinks and a directory fsync): with nothing to give the thread back
// between partitions, a pass ran the retention of every delete-policy partition in one turn.
describe('log-node cleaner slices, retention of many partitions', () => {
  it('gives the thread back between partitions', async () => {
    const topics = ['timed-a', 'timed-b', 'timed-c'];
    const dir = tempDir('cleaner-retention-turns');
    let turn = 0;
    const turnsByTopic = new Map<string, Set<number>>();
    const watching: FileIO = {
      ...nodeFileIO,
      unlink: (file) => {
        const topic = topics.find((name) => file.includes(path.join('topics', name, '0')));
        if (topic !== undefined && file.endsWith('.log')) {
          turnsByTopic.set(topic, (turnsByTopic.get(topic) ?? new Set()).add(turn));
        }
        nodeFileIO.unlink(file);
      },
    };
    const running = await openSlicedNode(dir.path, { fileIO: watching });
    try {
      for (const topic of topics) await fillPastRetention(running.client, topic);
      let passEnded = false;
      const pass = running.cleaner.runOnce().finally(() => {
        passEnded = true;
      });
      for (let turns = 0; turns < TURNS_TO_PHASE_MAX && !passEnded; turns++) {
        await nextTurn();
        turn++;
      }
      const summaries = await pass;
      for (const topic of topics) {
        expect(summaries.find((s) => s.topic === topic)?.segmentsDeleted, topic).toBeGreaterThan(0);
      }
      const turns = topics.map((topic) => [...(turnsByTopic.get(topic) ?? [])]);
      expect(
        new Set(turns.flat()).size,
        `the turns of each topic's unlinks: ${JSON.stringify(turns)}`,
      ).toBe(topics.length);
    } finally {
      await running.stop();
      dir.cleanup();
    }
  });
});

describe('log-node cleaner slices, a segment nothing of which is kept', () => {
  // The first round's segments are all superseded: their copies are written from no batch, so
  // the rewrite had no write to wait for between slices and ran every slice of a segment in one
  // turn of the event loop (each slice reads the segment again from where the last one stopped).
  it('gives the thread back between slices of its rewrite', async () => {
    const dir = tempDir('cleaner-superseded');
    let copiesOpened = 0;
    let readsThisTurn = 0;
    let readsInOneTurnMax = 0;
    const watching: FileIO = {
      ...nodeFileIO,
      open: (file, flags) => {
        if (file.endsWith('.cleaned')) copiesOpened++;
        return nodeFileIO.open(file, flags);
      },
      read: (fd, buffer, offset, length, position) => {
        if (copiesOpened === 1) {
          readsThisTurn++;
          readsInOneTurnMax = Math.max(readsInOneTurnMax, readsThisTurn);
        }
        return nodeFileIO.read(fd, buffer, offset, length, position);
      },
    };
    const running = await openSlicedNode(dir.path, { fileIO: watching });
    try {
      await fillTwice(running.client);
      let passEnded = false;
      const pass = running.cleaner.runOnce().finally(() => {
        passEnded = true;
      });
      for (let turn = 0; turn < TURNS_TO_PHASE_MAX && !passEnded && copiesOpened < 2; turn++) {
        readsThisTurn = 0;
        await nextTurn();
      }
      await pass;
      expect(copiesOpened, 'the pass rewrote more than one segment').toBeGreaterThanOrEqual(2);
      expect(readsInOneTurnMax, 'slices of the first rewrite run in one turn').toBeLessThanOrEqual(
        2,
      );
    } finally {
      await running.stop();
      dir.cleanup();
    }
  });
});

interface Seen {
  /** Reads of the partition's segments since the pass began. */
  reads: number;
  /** Compacted copies of its segments opened. */
  copies: number;
}
