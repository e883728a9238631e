/**
 * `tailbase start --log kafka://<librdkafka's mock cluster> --allow-unverified-topics` under
 * concurrent writers, each reading every acknowledged write back at its token, while a seeded
 * nemesis moves partition leaders, takes a broker down (its partitions' leaders moved to the
 * others, as Kafka's controller would) and up again, and pushes error codes onto Produce and
 * Fetch requests. Then the log, read back over Kafka: every acknowledged write is in it once, at
 * the offset it was answered with; no key is in it twice; no write answered as not stored is in
 * it; no token read was stale. Every write not acknowledged was a 503.
 *
 * What the mock cannot do (librdkafka 2.0.2): it keeps one copy of each partition for all its
 * brokers, so a leader change loses nothing by construction (replication is not under test, the
 * client's retries and numbering are); it cannot stall a broker, only refuse or delay answers.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { KafkaLogClient } from '../../shared/kafka-log/index.js';
import { spawnEmbedded } from '../harness/embedded.js';
import { mockClusterAvailable, startMockCluster } from '../harness/kafka-mock.js';
import { seededRandom, testSeed } from '../harness/random.js';
import { sleep } from '../harness/spawn-node.js';
import { storedKeys } from '../harness/stored-keys.js';
import { withinMs, writeOutcome, type WriteOutcome } from '../harness/write-outcome.js';
import { call } from './gateway-harness.js';

const BROKERS = [1, 2, 3];
const PARTITIONS = 6;
const COLLECTION = 'orders';
const WRITERS = 6;
const READERS = 3;
/** Token reads still queued when writing stops that are done, the newest. */
const READS_LEFT_MAX = 6;
const NEMESIS_ROUNDS = 9;
const ROUND_MS = 500;
const DOWN_MS = 700;
/** A write's own bound: the gateway answers by then (its append attempts are bounded). */
const WRITE_WAIT_MS_MAX = 30_000;
/** Kafka's API keys and error codes the nemesis pushes. */
const PRODUCE = 0;
const FETCH = 1;
const NOT_LEADER_OR_FOLLOWER = 6;
const REQUEST_TIMED_OUT = 7;
const NOT_ENOUGH_REPLICAS = 19;

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

describe.skipIf(!mockClusterAvailable())("tailbase start on librdkafka's mock cluster", () => {
  it('loses, duplicates and reads stale no acknowledged write while leaders move and brokers go down', async () => {
    const random = seededRandom(testSeed('kafka-mock-failover'));
    const mock = await startMockCluster(BROKERS.length);
    cleanups.push(() => mock.stop());
    await mock.command(`topic ${COLLECTION} ${PARTITIONS} 3`);
    await mock.command('topic __tailbase_settings 1 3');
    const embedded = await spawnEmbedded({
      args: ['--log', `kafka://${mock.bootstrap}`, '--allow-unverified-topics'],
    });
    cleanups.push(() => embedded.stop());

    const outcomes: WriteOutcome[] = [];
    const stale: string[] = [];
    const tokenReads = new Map<number, number>();
    const toRead: { key: string; n: number; token: string }[] = [];
    let writing = true;
    const writer = async (w: number) => {
      for (let n = 0; writing; n++) {
        const key = `w${w}-${n}`;
        const outcome = await writeOutcome(
          key,
          call(embedded.url, 'PUT', `/v1/collections/${COLLECTION}/docs/${key}`, { w, n }),
        );
        outcomes.push(outcome);
        if (outcome.status !== 200) {
          await sleep(20);
          continue;
        }
        toRead.push({ key, n, token: outcome.token! });
      }
    };
    /** Reads the newest acknowledged write not read yet at its token, as another client would. */
    const reader = async () => {
      while (writing || toRead.length > 0) {
        const next = toRead.pop();
        if (next === undefined) {
          await sleep(10);
          continue;
        }
        const read = await call(
          embedded.url,
          'GET',
          `/v1/collections/${COLLECTION}/docs/${next.key}`,
          undefined,
          { 'tailbase-token': next.token },
        );
        tokenReads.set(read.status, (tokenReads.get(read.status) ?? 0) + 1);
        // A token read may fail while the log moves (503, 504); it may never answer older data.
        if (read.status === 404 || (read.status === 200 && read.body.value?.n !== next.n)) {
          stale.push(`${next.key}: ${read.status} ${JSON.stringify(read.body)}`);
        }
      }
    };
    const writers = Array.from({ length: WRITERS }, (_, w) => writer(w));
    const readers = Array.from({ length: READERS }, () => reader());

    const moveLeaders = async (away: number | null) => {
      for (let partition = 0; partition < PARTITIONS; partition++) {
        const to = random.pick(BROKERS.filter((b) => b !== away));
        await mock.command(`leader ${COLLECTION} ${partition} ${to}`);
      }
      await mock.command(
        `leader __tailbase_settings 0 ${random.pick(BROKERS.filter((b) => b !== away))}`,
      );
    };
    const actions: string[] = [];
    for (let round = 0; round < NEMESIS_ROUNDS; round++) {
      await sleep(ROUND_MS);
      const action = random.pick(['move', 'down', 'errors'] as const);
      actions.push(action);
      if (action === 'move') {
        await moveLeaders(null);
      } else if (action === 'down') {
        const broker = random.pick(BROKERS);
        await mock.command(`down ${broker}`);
        await moveLeaders(broker);
        await sleep(DOWN_MS);
        await mock.command(`up ${broker}`);
      } else {
        await mock.command(
          `errors ${PRODUCE} ${random.pick([NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS])} ${NOT_LEADER_OR_FOLLOWER}`,
        );
        await mock.command(`errors ${FETCH} ${NOT_LEADER_OR_FOLLOWER}`);
      }
    }
    await sleep(ROUND_MS);
    writing = false;
    // Reads left to do are bounded by the writes: at most one token wait (5 s) each, 3 at once.
    toRead.splice(0, Math.max(0, toRead.length - READS_LEFT_MAX));
    await withinMs(
      Promise.all([...writers, ...readers]),
      WRITE_WAIT_MS_MAX,
      'a write was not answered in time',
    );

    const acked = outcomes.filter((o) => o.status === 200);
    const failed = outcomes.filter((o) => o.status !== 200);
    process.stdout.write(
      `mock cluster failover (${actions.join(',')}): ${acked.length} acknowledged, ${failed.length} refused or unknown (${[...new Set(failed.map((o) => o.code))].join(', ')}), token reads by status ${JSON.stringify(Object.fromEntries(tokenReads))}\n`,
    );
    // Writes went on through the nemesis.
    expect(acked.length).toBeGreaterThan(WRITERS * 10);
    for (const outcome of failed) expect(outcome.status, JSON.stringify(outcome)).toBe(503);
    expect(stale).toEqual([]);
    expect(tokenReads.get(200) ?? 0).toBeGreaterThan(0);

    const log = await KafkaLogClient.connect({
      bootstrap: mock.bootstrap.split(','),
      allowUnverifiedTopics: true,
    });
    cleanups.push(() => log.close());
    const stored = await storedKeys(log, COLLECTION, PARTITIONS);
    for (const [key, places] of stored) expect(places, key).toHaveLength(1);
    for (const { key, partition, offset } of acked) {
      expect(stored.get(key), key).toEqual([{ partition, offset }]);
    }
    // Every write not acknowledged was answered as unknown, or as not stored and is not stored.
    for (const { key, code } of failed) {
      if (code !== 'write_outcome_unknown')
        expect(stored.get(key), `${key} ${code}`).toBeUndefined();
    }
  }, 120_000);
});
