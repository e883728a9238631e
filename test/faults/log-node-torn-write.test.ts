// Proves that a group commit torn by a power cut never takes its partition offline: one
// partition's round of several batches is in flight (its O_DSYNC write not yet returned) when the
// cut comes, the model persists any pattern of its sectors (its start lost and its end kept too,
// as LazyFS tears writes), and recovery keeps every acknowledged batch, cuts the rest and serves
// the partition. Seeded: a failing seed replays with TAILBASE_TEST_SEED.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkBatch } from '../../shared/batch-codec.js';
import { openLogNode, type LogNodeOptions, type OpenLogNode } from '../../log-node/index.js';
import { createLogger } from '../../shared/logger.js';
import { AppendHistory } from '../harness/append-history.js';
import { PowerLossIO } from '../harness/power-loss-io.js';
import { partitionDirOf, seededRandom, tempDir, type TempDir, testSeed } from '../harness/index.js';

/** Seeds at most; the run stops earlier once it has seen TEARS_WANTED of the tears below. */
const SEEDS_MAX = Number(process.env.TAILBASE_TORN_WRITE_SEEDS ?? 400);
/** Tears with a valid batch after the damage (the case that stopped a partition) to see. */
const TEARS_WANTED = Number(process.env.TAILBASE_TORN_WRITE_TEARS ?? 3);
const TOPIC = 'torn';
/** Batches each partition is sent at once: the first is a round alone, the rest the next round. */
const BATCHES_PER_PARTITION = 16;
/**
 * The cut comes at one of the first mutating calls after the burst: the rounds' writes of both
 * partitions and their recovery points interleave, so some cuts land while a partition's second
 * round (several batches) is in flight.
 */
const CUT_CALLS_MAX = 8;
const ACTIVE = `${'0'.padStart(20, '0')}.log`;

const silent = createLogger('torn-write', 'silent');
const options = (dataDir: string): LogNodeOptions => ({
  dataDir,
  partitions: 2,
  logger: silent,
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

describe('a group commit torn by a power cut', () => {
  it(
    `is cut back to the acknowledged batches and the partition serves, seed after seed`,
    async () => {
      const first = testSeed('log-node torn write');
      const kinds = new Map<string, number>();
      let truncated = 0;
      let validAfterDamage = 0;
      let seeds = 0;
      for (let seed = first; seed < first + SEEDS_MAX && validAfterDamage < TEARS_WANTED; seed++) {
        seeds++;
        const context = `seed ${seed} (replay with TAILBASE_TEST_SEED=${seed})`;
        const random = seededRandom(seed);
        dir = tempDir('torn-write');
        running = await openLogNode(options(dir.path));
        await running.client.ensureTopic(TOPIC, { cleanupPolicy: 'delete' });
        await running.stop();

        const io = new PowerLossIO(random);
        running = await openLogNode({ ...options(dir.path), fileIO: io });
        io.cutAfter(random.int(2, CUT_CALLS_MAX));
        const history = new AppendHistory();
        const appends: Promise<void>[] = [];
        for (let n = 0; n < BATCHES_PER_PARTITION; n++) {
          for (const partition of [0, 1]) {
            const sent = history.makeBatch(random, `p${partition}.n${n}`, 1000, null, {
              records: random.int(1, 2),
              padBytes: random.int(20, 200),
            });
            appends.push(
              running.client.append(TOPIC, partition, sent).then(
                (ack) => history.acked({ topic: TOPIC, partition, ...ack, sent }),
                () => undefined,
              ),
            );
          }
        }
        await Promise.all(appends);
        // A cut past the burst's last call comes once it is over: nothing is in flight then.
        io.cut();
        await running.stop().catch(() => undefined);
        running = null;
        for (const choice of io.crash()) {
          if (choice.path.endsWith('.log'))
            kinds.set(choice.kind, (kinds.get(choice.kind) ?? 0) + 1);
        }

        if (validBatchAfterDamage(path.join(partitionDirOf(dir.path, TOPIC, 0), ACTIVE))) {
          validAfterDamage++;
        }

        running = await openLogNode(options(dir.path));
        const status = running.node.status();
        expect(
          status.partitions.filter((p) => p.error !== undefined).map((p) => p.error),
          `${context}: stopped partitions`,
        ).toEqual([]);
        truncated += status.partitions.filter((p) => p.truncatedBytesOnLoad > 0).length;
        for (const partition of [0, 1]) {
          await history.check(running.client, TOPIC, partition, true).catch((error: Error) => {
            throw new Error(`${context}: ${error.message}`);
          });
          const ack = await running.client.append(
            TOPIC,
            partition,
            history.makeBatch(random, 'after', 1000, null),
          );
          expect(ack.duplicate).toBe(false);
        }
        await running.stop();
        running = null;
        dir.cleanup();
        dir = null;
      }
      console.info(
        `torn writes: ${seeds} seeds from ${first}, partitions that truncated a tail: ${truncated}, ` +
          `of them with valid batches after the damage (the partition stopped before): ${validAfterDamage}; ` +
          `the segment's last write at the cut: ${[...kinds].map(([kind, n]) => `${kind} ${n}`).join(', ')}`,
      );
      expect(validAfterDamage, 'tears whose start was lost and a later batch kept').toBeGreaterThan(
        0,
      );
    },
    20_000 + SEEDS_MAX * 1_000,
  );
});

/** Whether the file holds a damaged batch with a whole batch somewhere after it. */
function validBatchAfterDamage(file: string): boolean {
  const bytes = fs.readFileSync(file);
  let at = 0;
  for (let check = checkBatch(bytes, at); check.ok; check = checkBatch(bytes, at)) {
    at += check.header.sizeBytes;
  }
  for (let later = at + 1; later < bytes.length; later++) {
    if (checkBatch(bytes, later).ok) return true;
  }
  return false;
}
