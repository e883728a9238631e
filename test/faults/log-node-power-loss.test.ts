// Proves invariant 1 across power cuts, which kill -9 cannot test (the page cache survives it): a
// log-node in process on PowerLossIO takes appends from concurrent writers (idempotent and not,
// new topics created, small segments rolling, the cleaner compacting) until a power cut at a
// seeded moment; the directory is rewritten to what the cut could leave (unsynced writes dropped,
// kept or torn, in pieces too; unsynced directory entries reverted or kept), and a fresh log-node
// on node:fs recovers it, often after cuts during recovery too (in the open's truncations and
// recovery points, the first reads' index rebuilds, the cleaner's swaps). Then every topic that had an acknowledged append is there, every
// acknowledged append is in the log once at its acknowledged offsets, offsets are dense where
// nothing compacts, no partition is stopped, every retry of an acknowledged idempotent batch is
// answered as a duplicate, no producer id is handed out twice, and the node takes writes.
// TAILBASE_POWER_CUTS=50 runs the target of 50 cuts.
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openLogNode, type LogNodeOptions, type OpenLogNode } from '../../log-node/index.js';
import { createLogger } from '../../shared/logger.js';
import type { LogClient } from '../../shared/log-api.js';
import { AppendHistory, type IdempotentProducer } from '../harness/append-history.js';
import { PowerLossIO } from '../harness/power-loss-io.js';
import type { PowerLossChoice } from '../harness/power-loss-model.js';
import { type Random, seededRandom, sleep, tempDir, type TempDir } from '../harness/index.js';

const CUTS = Number(process.env.TAILBASE_POWER_CUTS ?? 12);
/** The suite's seed; TAILBASE_TEST_SEED replays another. */
const SEED_DEFAULT = 20261203;
const WRITERS = 6;
const PARTITIONS = 2;
/** Collection topics with the delete policy and no retention: nothing removes their records. */
const DENSE_TOPICS = ['d0', 'd1'];
/** Keys per compacted topic: few, so the cleaner finds superseded records. */
const COMPACT_KEYS = 12;
/** The cut comes at one of this many mutating file calls after the node opened. */
const CUT_CALLS_MAX = 500;
/** A round whose writers have not reached the cut by then is cut where it is. */
const ROUND_MS_MAX = 8_000;
/** Recoveries a cut may interrupt in a row after each cut under load (each with odds 1/2). */
const RECOVERY_CUTS_MAX = 3;
/**
 * A cut during recovery comes at one of this many mutating file calls after the open began (an
 * open makes a few: a truncation and its fsync, a recovery point; the cleaner and reads more).
 */
const RECOVERY_CUT_CALLS_MAX = 12;
/** How long an interrupted recovery's node runs (its cleaner, its index rebuilds) before the cut. */
const RECOVERY_MS_MAX = 300;

const silent = createLogger('power-loss', 'silent');
const nodeOptions = (dataDir: string): LogNodeOptions => ({
  dataDir,
  partitions: PARTITIONS,
  logger: silent,
  segmentBytesMax: 16 * 1024,
  batchBytesMax: 8 * 1024,
  indexIntervalBytes: 1024,
  cleanerIntervalMs: 20,
  cleanerMinDirtyRatio: 0.2,
  kafka: null,
});

let dir: TempDir | null = null;
let running: OpenLogNode | null = null;
afterEach(async () => {
  await running?.stop().catch(() => undefined);
  running = null;
  dir?.cleanup();
  dir = null;
});

interface Figures {
  cuts: number;
  /** Cuts armed while a node recovered, and those that came inside openLogNode itself. */
  recoveryCuts: number;
  recoveryCutsInOpen: number;
  recoveries: number;
  acks: number;
  ackChecks: number;
  duplicateRetries: number;
  tornTailsTruncated: number;
  choices: Map<string, number>;
}

describe('log-node across power cuts', () => {
  it(
    `loses no acknowledged append across ${CUTS} power cuts under concurrent load`,
    async () => {
      const fromEnv = process.env.TAILBASE_TEST_SEED;
      const seed = fromEnv !== undefined && fromEnv !== '' ? Number(fromEnv) : SEED_DEFAULT;
      console.info(`log-node power loss: seed ${seed} (replay with TAILBASE_TEST_SEED=${seed})`);
      const random = seededRandom(seed);
      dir = tempDir('power-loss');
      const history = new AppendHistory();
      const producerIds = new Set<number>();
      const topics = new Set(DENSE_TOPICS);
      const figures: Figures = {
        cuts: 0,
        recoveryCuts: 0,
        recoveryCutsInOpen: 0,
        recoveries: 0,
        acks: 0,
        ackChecks: 0,
        duplicateRetries: 0,
        tornTailsTruncated: 0,
        choices: new Map(),
      };

      running = await openLogNode(nodeOptions(dir.path));
      for (const topic of DENSE_TOPICS)
        await running.client.ensureTopic(topic, { cleanupPolicy: 'delete' });
      await running.stop();
      running = null;

      for (let round = 0; round < CUTS; round++) {
        const io = new PowerLossIO(random);
        running = await openLogNode({ ...nodeOptions(dir.path), fileIO: io });
        const cutAt = random.int(1, CUT_CALLS_MAX);
        io.cutAfter(cutAt);
        const newTopic = `n${round}`;
        const producers = await runUntilCut(running.client, io, {
          random,
          round,
          history,
          topics: [...topics, newTopic],
          producerIds,
        });
        topics.add(newTopic);
        await running.stop().catch(() => undefined);
        running = null;
        const choices = io.crash();
        figures.cuts++;
        countChoices(figures, choices);
        const recoveryCuts = await cutRecoveries(dir.path, random, figures);
        const context =
          `cut ${round + 1} at mutating call ${cutAt}, then ${recoveryCuts} cut during recovery ` +
          `(seed ${seed}): ${choices.length} choices`;

        running = await openLogNode(nodeOptions(dir.path));
        figures.recoveries++;
        const status = running.node.status();
        const stopped = status.partitions.filter((p) => p.error !== undefined);
        expect(stopped, `${context}: stopped partitions`).toEqual([]);
        figures.tornTailsTruncated += status.partitions.filter(
          (p) => p.truncatedBytesOnLoad > 0,
        ).length;
        const client = running.client;
        figures.ackChecks += await checkLog(client, history, `${context}`);
        figures.duplicateRetries += await retryIdempotent(client, history, producers, context);
        // It takes writes: one more to every topic-partition.
        for (const topic of (await client.topics()).filter((t) => !t.name.startsWith('__'))) {
          for (let p = 0; p < PARTITIONS; p++) {
            const batch = history.makeBatch(
              random,
              `r${round}.after.${topic.name}.${p}`,
              COMPACT_KEYS,
              null,
            );
            const ack = await client.append(topic.name, p, batch);
            history.acked({ topic: topic.name, partition: p, ...ack, sent: batch });
          }
        }
        await running.stop();
        running = null;
      }
      running = await openLogNode(nodeOptions(dir.path));
      figures.ackChecks += await checkLog(running.client, history, 'after the last cut');
      figures.acks = history.acks.length;
      console.info(
        `power cuts: ${figures.cuts} under load and ${figures.recoveryCuts} during recovery ` +
          `(${figures.recoveryCutsInOpen} inside the open itself), recoveries: ${figures.recoveries}, ` +
          `acknowledged appends: ${figures.acks} (${figures.ackChecks} ack checks over all rounds), ` +
          `retried idempotent batches answered as duplicates: ${figures.duplicateRetries}, ` +
          `partitions that truncated a torn tail: ${figures.tornTailsTruncated}\n` +
          [...figures.choices]
            .sort()
            .map(([kind, n]) => `  ${kind}: ${n}`)
            .join('\n'),
      );
      expect(figures.acks).toBeGreaterThan(CUTS * WRITERS);
    },
    60_000 + CUTS * 15_000,
  );
});

function countChoices(figures: Figures, choices: readonly PowerLossChoice[]): void {
  const count = (kind: string) => figures.choices.set(kind, (figures.choices.get(kind) ?? 0) + 1);
  for (const choice of choices) {
    count(`${choice.kind} ${fileKind(choice.path)}`);
    for (const op of choice.reverted ?? []) {
      const [verb, ...names] = op.split(' ');
      count(`reverted ${verb} ${names.map(fileKind).join(' -> ')}`);
    }
  }
}

/**
 * Power cuts while a node recovers: up to RECOVERY_CUTS_MAX times in a row (odds 1/2 each), a
 * node opens on PowerLossIO with a cut armed a few mutating calls in, so it lands in the open's
 * recovery (leftovers removed, tails truncated, recovery points stored) or, once the node is
 * open, in what it does first: reads that rebuild missing indexes and the cleaner's swaps.
 * Returns the cuts made.
 */
async function cutRecoveries(dataDir: string, random: Random, figures: Figures): Promise<number> {
  let cuts = 0;
  while (cuts < RECOVERY_CUTS_MAX && random.next() < 0.5) {
    const io = new PowerLossIO(random);
    io.cutAfter(random.int(1, RECOVERY_CUT_CALLS_MAX));
    try {
      running = await openLogNode({ ...nodeOptions(dataDir), fileIO: io });
      if (io.isCut) figures.recoveryCutsInOpen++;
      for (const topic of await running.client.topics()) {
        for (let p = 0; p < PARTITIONS && !io.isCut; p++) {
          await running.client.read(topic.name, p, 0).catch(() => undefined);
        }
      }
      for (const deadline = Date.now() + RECOVERY_MS_MAX; !io.isCut && Date.now() < deadline;) {
        await sleep(5);
      }
    } catch {
      // The cut came inside the open: the node never opened.
      figures.recoveryCutsInOpen++;
    }
    io.cut();
    await running?.stop().catch(() => undefined);
    running = null;
    countChoices(figures, io.crash());
    figures.recoveryCuts++;
    figures.recoveries++;
    cuts++;
  }
  return cuts;
}

interface RoundOptions {
  random: Random;
  round: number;
  history: AppendHistory;
  topics: readonly string[];
  producerIds: Set<number>;
}

/**
 * Writers append until the cut fails them; returns the round's idempotent producers (each
 * writer's, per topic-partition). Each writer takes a new producer id, which must be new.
 */
async function runUntilCut(
  client: LogClient,
  io: PowerLossIO,
  options: RoundOptions,
): Promise<IdempotentProducer[]> {
  const { random, round, history, topics, producerIds } = options;
  const producers = new Map<string, IdempotentProducer>();
  const writer = async (w: number, writerRandom: Random) => {
    let identity;
    try {
      identity = await client.initProducerId();
    } catch {
      return;
    }
    expect(producerIds.has(identity.producerId), `producer id ${identity.producerId} reused`).toBe(
      false,
    );
    producerIds.add(identity.producerId);
    for (let n = 0; ; n++) {
      const topic = writerRandom.pick(topics);
      const partition = writerRandom.int(0, PARTITIONS - 1);
      let producer: IdempotentProducer | null = null;
      if (writerRandom.next() < 0.5) {
        const key = `${w}/${topic}/${partition}`;
        producer = producers.get(key) ?? {
          ...identity,
          nextSequence: 0,
          pending: null,
          lastAcked: null,
        };
        producers.set(key, producer);
      }
      const batch = history.makeBatch(
        writerRandom,
        `r${round}.w${w}.n${n}`,
        COMPACT_KEYS,
        producer,
      );
      if (producer) producer.pending = batch;
      try {
        const ack = await client.append(topic, partition, batch);
        const acked = { topic, partition, ...ack, sent: batch };
        history.acked(acked);
        if (producer) {
          producer.pending = null;
          producer.lastAcked = acked;
        }
      } catch {
        return;
      }
    }
  };
  const writers = Array.from({ length: WRITERS }, (_, w) =>
    writer(w, seededRandom(random.int(0, 0x7fff_ffff))),
  );
  for (const deadline = Date.now() + ROUND_MS_MAX; !io.isCut && Date.now() < deadline;) {
    await sleep(5);
  }
  io.cut();
  await Promise.all(writers);
  return [...producers.entries()].map(([key, producer]) => {
    const [, topic, partition] = key.split('/');
    return Object.assign(producer, { topic, partition: Number(partition) });
  });
}

/**
 * Every topic-partition of the log against the history; returns the acks checked. Every topic
 * that had an acknowledged append must be there: one that vanished lost them all.
 */
async function checkLog(
  client: LogClient,
  history: AppendHistory,
  context: string,
): Promise<number> {
  const listed = new Set((await client.topics()).map((topic) => topic.name));
  const acknowledged = new Set(history.acks.map((ack) => ack.topic));
  const vanished = [...acknowledged].filter((topic) => !listed.has(topic)).sort();
  expect(vanished, `${context}: topics with acknowledged appends that are gone`).toEqual([]);
  let checked = 0;
  for (const topic of listed) {
    if (topic.startsWith('__')) continue;
    for (let p = 0; p < PARTITIONS; p++) {
      try {
        checked += await history.check(client, topic, p, DENSE_TOPICS.includes(topic));
      } catch (error) {
        throw new Error(`${context}: ${(error as Error).message}`);
      }
    }
  }
  return checked;
}

/**
 * Each producer's last acknowledged batch sent again must come back as a duplicate with its
 * offsets (the producer state survived the cut); a batch the cut left unanswered is sent again
 * and is appended once, or found. Returns the duplicates checked.
 */
async function retryIdempotent(
  client: LogClient,
  history: AppendHistory,
  producers: readonly (IdempotentProducer & { topic?: string; partition?: number })[],
  context: string,
): Promise<number> {
  let duplicates = 0;
  for (const producer of producers) {
    const topic = producer.topic!;
    const partition = producer.partition!;
    if (producer.lastAcked !== null) {
      const retry = await client.append(topic, partition, producer.lastAcked.sent);
      expect(
        retry,
        `${context}: retry of ${topic}:${partition}@${producer.lastAcked.baseOffset}`,
      ).toEqual({
        baseOffset: producer.lastAcked.baseOffset,
        lastOffset: producer.lastAcked.lastOffset,
        duplicate: true,
      });
      duplicates++;
    }
    if (producer.pending !== null) {
      const ack = await client.append(topic, partition, producer.pending);
      history.acked({ topic, partition, ...ack, sent: producer.pending });
    }
  }
  return duplicates;
}

/** What a file or directory is, for the figures: by suffix or name. */
function fileKind(file: string): string {
  const name = path.basename(file);
  const suffix = /\.(log|index|producers|cleaned)(\.tmp)?$/.exec(name);
  if (suffix) return suffix[0];
  if (/\.json(\.tmp)?$/.test(name)) return name;
  if (name === 'recovery-point') return name;
  if (/^\d+$/.test(name)) return 'partition directory';
  if (path.basename(path.dirname(file)) === 'topics') return 'topic directory';
  return `${name} directory`;
}
