/**
 * `tailbase start --log kafka://<librdkafka's mock cluster> --allow-unverified-topics` under
 * concurrent client sessions (test/chaos/history.ts: puts, deletes, token reads, strong reads,
 * and a change-feed consumer, every operation recorded) while a seeded nemesis moves partition
 * leaders, takes a broker down (its partitions' leaders moved to the others, as Kafka's
 * controller would) and up again, and pushes error codes onto Produce and Fetch requests. Then
 * the chaos checker (test/chaos/check.ts) over the history, the log read back over Kafka and a
 * final strong read of every key: 0 anomalies, so every acknowledged write is in the log once at
 * the offset it was answered with, no refused write is in it, no token read was stale (its own
 * session's writes, rule b, and anyone's below its token, rule f), every key's strong reads and
 * writes are linearizable (c), the feed delivered the log in order (d), and the final reads equal
 * the log (e). Every write not acknowledged was a 503.
 *
 * What the mock cannot do (librdkafka 2.0.2): it keeps one copy of each partition for all its
 * brokers, so a leader change loses nothing by construction (replication is not under test, the
 * client's retries and numbering are); it cannot stall a broker, only refuse or delay answers.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { KafkaLogClient } from '../../shared/kafka-log/index.js';
import type { LogClient } from '../../shared/log-api.js';
import { TokenCodec } from '../../shared/token.js';
import { check, type FinalRead, type LogEntry } from '../chaos/check.js';
import { FeedConsumer, Recorder, Session, writeIdOf, type Op } from '../chaos/history.js';
import { describeOp } from '../chaos/run.js';
import { embeddedOnMock } from '../harness/embedded-on-mock.js';
import { mockClusterAvailable } from '../harness/kafka-mock.js';
import { seededRandom, testSeed } from '../harness/random.js';
import { sleep } from '../harness/spawn-node.js';
import { storedRecords } from '../harness/stored-keys.js';
import { withinMs } from '../harness/write-outcome.js';
import { call } from './gateway-harness.js';

const BROKERS = [1, 2, 3];
const PARTITIONS = 6;
const COLLECTION = 'orders';
const SESSIONS = 9;
/** Acknowledged writes the load must reach through the nemesis (writes went on). */
const ACKED_WRITES_MIN = 60;
/** Keys the sessions share: each is written and read by several, as the checker's rules need. */
const KEYS = 40;
const NEMESIS_ROUNDS = 9;
const ROUND_MS = 500;
const DOWN_MS = 700;
/** A request's own bound: the gateway answers by then (its append attempts are bounded). */
const WRITE_WAIT_MS_MAX = 30_000;
/** After the load: how long the change feed may take to deliver the log's last records. */
const FEED_CATCH_UP_MS_MAX = 30_000;
const FINAL_READ_ATTEMPTS_MAX = 5;
/** How long the load may go on after the nemesis to reach ACKED_WRITES_MIN on a slow machine. */
const LOAD_AFTER_NEMESIS_MS_MAX = 60_000;
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
    const { mock, embedded, stop } = await embeddedOnMock({ [COLLECTION]: PARTITIONS });
    cleanups.push(stop);

    const recorder = new Recorder({ url: () => embedded.url, timeoutMs: WRITE_WAIT_MS_MAX });
    const feed = new FeedConsumer(recorder, () => random.int(50, 400));
    feed.start();
    cleanups.push(() => feed.stop());
    let writing = true;
    /** The load goes on past the nemesis until enough writes were acknowledged, within a bound. */
    let loadDeadline = Infinity;
    const acked = () =>
      recorder.ops.filter((op) => op.writes !== undefined && op.outcome === 'ok').length;
    /** A client: puts, deletes, token reads (half of its own last write) and strong reads. */
    const session = async (id: number) => {
      const client = new Session(id, recorder);
      let lastWritten: string | null = null;
      while (writing || (acked() < ACKED_WRITES_MIN && Date.now() < loadDeadline)) {
        const key = `k${random.int(0, KEYS - 1)}`;
        const roll = random.int(1, 100);
        let op: Op;
        if (roll <= 55) op = await client.put(COLLECTION, key);
        else if (roll <= 60) op = await client.delete(COLLECTION, key);
        else if (roll <= 85) {
          const back = lastWritten !== null && random.int(1, 2) === 1 ? lastWritten : key;
          op = await client.read(COLLECTION, back, false);
        } else op = await client.read(COLLECTION, key, true);
        if (op.writes !== undefined && op.outcome === 'ok') lastWritten = key;
        if (op.outcome !== 'ok') await sleep(20);
      }
    };
    const sessions = Array.from({ length: SESSIONS }, (_, id) => session(id));

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
    loadDeadline = Date.now() + LOAD_AFTER_NEMESIS_MS_MAX;
    writing = false;
    // Each session ends its operation in flight, which its request timeout bounds.
    await withinMs(
      Promise.all(sessions),
      LOAD_AFTER_NEMESIS_MS_MAX + WRITE_WAIT_MS_MAX,
      'an operation was not answered in time',
    );

    const log = await KafkaLogClient.connect({
      bootstrap: mock.bootstrap.split(','),
      allowUnverifiedTopics: true,
    });
    cleanups.push(() => log.close());
    const entries = await logEntries(log);
    const ends = new Map<number, number>();
    for (const entry of entries) ends.set(entry.partition, entry.offset);
    recorder.feedCaughtUp = await waitUntil(() =>
      [...ends].every(([partition, last]) =>
        recorder.feed.some((e) => e.partition === partition && e.offset >= last),
      ),
    );
    await feed.stop();
    const finals = await finalReads(embedded.url, entries);

    const status = await call(embedded.url, 'GET', '/v1/status');
    const tokens = new TokenCodec(status.body.clusterId as string, PARTITIONS);
    const result = check(
      recorder.history(),
      entries,
      { reads: finals, searches: [], modelSearches: [] },
      (token) => tokens.decode(token),
    );
    const writeOps = recorder.ops.filter((op) => op.writes !== undefined);
    const notOk = writeOps.filter((op) => op.outcome !== 'ok');
    process.stdout.write(
      `mock cluster failover (${actions.join(',')}): ${JSON.stringify(result.stats.ops)}, ` +
        `writes not ok: ${[...new Set(notOk.map((op) => op.error))].join(', ')}; ` +
        `${result.stats.logRecords} records, ${result.stats.feedEvents} feed events, ` +
        `${result.stats.linearizability.keys} keys decided, ${result.stats.tokenReads.claims} token claims\n`,
    );
    for (const anomaly of result.anomalies) {
      const ops = anomaly.ops.map((id) => describeOp(recorder.ops[id])).join('\n    ');
      process.stderr.write(`${anomaly.rule} ${anomaly.kind}: ${anomaly.message}\n    ${ops}\n`);
    }
    expect(result.anomalies).toEqual([]);
    // Writes went on through the nemesis, and each rule had something to hold.
    expect(result.stats.writes.ok).toBeGreaterThan(ACKED_WRITES_MIN);
    expect(result.stats.ops['read']?.ok ?? 0).toBeGreaterThan(0);
    expect(result.stats.tokenReads.claims).toBeGreaterThan(0);
    expect(result.stats.linearizability.keys).toBeGreaterThan(0);
    expect(result.stats.feedEvents).toBeGreaterThanOrEqual(result.stats.logRecords);
    expect(result.stats.finalKeys).toBeGreaterThan(0);
    // A write not acknowledged was answered 503 (refused, or its outcome unknown), never left open.
    for (const op of notOk) expect(op.error ?? '', describeOp(op)).toMatch(/^503 /);
  }, 180_000);
});

/** Every record of the collection, read back over Kafka, with the write each value names. */
async function logEntries(log: LogClient): Promise<LogEntry[]> {
  return (await storedRecords(log, COLLECTION, PARTITIONS)).map(
    ({ partition, offset, key, value }) => ({
      collection: COLLECTION,
      partition,
      offset,
      key,
      writeId: value === null ? null : writeIdOf(JSON.parse(Buffer.from(value).toString('utf8'))),
    }),
  );
}

async function waitUntil(done: () => boolean): Promise<boolean> {
  const deadline = Date.now() + FEED_CATCH_UP_MS_MAX;
  while (!done()) {
    if (Date.now() > deadline) return false;
    await sleep(100);
  }
  return true;
}

/** A strong read of every key the log holds, each tried until it answers. */
async function finalReads(url: string, entries: readonly LogEntry[]): Promise<FinalRead[]> {
  const reader = new Session(-1, new Recorder({ url: () => url, timeoutMs: WRITE_WAIT_MS_MAX }));
  const finals: FinalRead[] = [];
  for (const key of new Set(entries.map((entry) => entry.key))) {
    let read: FinalRead = { collection: COLLECTION, key, writeId: undefined, offset: null };
    for (
      let attempt = 0;
      attempt < FINAL_READ_ATTEMPTS_MAX && read.writeId === undefined;
      attempt++
    ) {
      const op = await reader.read(COLLECTION, key, true);
      if (op.outcome === 'ok') {
        read = { ...read, writeId: op.seen![0].writeId, offset: op.seen![0].offset };
      } else await sleep(200);
    }
    finals.push(read);
  }
  return finals;
}
