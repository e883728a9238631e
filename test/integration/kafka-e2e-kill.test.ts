/**
 * kill -9 a `tailbase log-node` process while an idempotent kafkajs producer (acks=-1,
 * maxInFlightRequests 1) sends keyed documents in a loop: three cycles of a few hundred records,
 * each killing the process and starting it again on the same data directory and Kafka port: in
 * the first cycle after a random number of acknowledged records (the next send in flight), in the
 * others once the listener has written and answered a Produce whose answer a proxy in front of it
 * (test/harness/kafka-proxy.ts) holds back, so the batch is on disk and the producer does not
 * know it. kafkajs retries a send across the
 * restart with the same producer id and sequence, which the log-node must recognise from the
 * state it rebuilt from disk. Afterwards every acknowledged record is in the log exactly once
 * (every partition read back over the log-node's Kafka listener), and every record whose send failed is
 * there at most once. A failed send leaves the producer's sequence unknown, so the loop then
 * starts a new producer (a new producer id), as an application must.
 */
import { Kafka, logLevel, Partitioners, type Producer } from 'kafkajs';
import { afterEach, describe, expect, it } from 'vitest';
import { KafkaLogClient } from '../../shared/kafka-log/index.js';
import { partitionFor } from '../../shared/partitioner.js';
import { freePort } from '../harness/free-port.js';
import { startKafkaProxy } from '../harness/kafka-proxy.js';
import {
  partitionDirOf,
  readPartition,
  readSegmentFiles,
  recordsOf,
} from '../harness/log-batches.js';
import { seededRandom, testSeed } from '../harness/random.js';
import { sleep, spawnNode, type SpawnedNode } from '../harness/spawn-node.js';
import { tempDir } from '../harness/temp-dir.js';

const PARTITIONS = 4;
const TOPIC = 'orders';
const CYCLES = 3;
const RECORDS_PER_CYCLE = 300;
const RECORDS_PER_SEND_MAX = 4;
/** The whole test's cap: a cycle that has not finished by then fails the test. */
const TEST_CAP_MS = 150_000;
const DOWN_MS = 300;

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) {
    await Promise.resolve()
      .then(cleanup)
      .catch(() => undefined);
  }
});

interface CycleCounts {
  cycle: number;
  sent: number;
  ackedBeforeKill: number;
  acked: number;
  failed: number;
  killedAfterMs: number;
  /** Records on disk when the process died whose send had no answer yet: retried after it. */
  inFlightOnDisk: number;
}

/** The keys of TOPIC's records in the data directory's segment files (the process is dead). */
function keysOnDisk(dataDir: string): Set<string> {
  const keys = new Set<string>();
  for (let partition = 0; partition < PARTITIONS; partition++) {
    let segments: ReturnType<typeof readSegmentFiles>;
    try {
      segments = readSegmentFiles(partitionDirOf(dataDir, TOPIC, partition));
    } catch {
      continue; // a torn tail or no directory yet: recovery's business, not counted here
    }
    for (const { batches } of segments) {
      for (const record of recordsOf(batches)) keys.add(record.key);
    }
  }
  return keys;
}

describe('kill -9 the log-node under an idempotent kafkajs producer', () => {
  it(
    'every acknowledged record is in the log once after each restart, and no failed one twice',
    async () => {
      const deadline = Date.now() + TEST_CAP_MS;
      const random = seededRandom(testSeed('kafka-e2e-kill'));
      const dir = tempDir('kafka-e2e-kill');
      cleanups.push(() => dir.cleanup());
      const kafkaPort = await freePort();
      const start = () =>
        spawnNode('log-node', [
          '--data',
          dir.path,
          '--port',
          '0',
          '--partitions',
          String(PARTITIONS),
          '--kafka-port',
          String(kafkaPort),
        ]);
      let node: SpawnedNode = await start();
      cleanups.push(() => node.stop());

      // The producer reaches the listener through a proxy that can hold one Produce answer: the
      // listener has written the batch, the producer does not know it, and then the process dies.
      let holdNext = false;
      let answerHeld: (() => void) | null = null;
      const proxy = await startKafkaProxy({
        target: () => ({ host: '127.0.0.1', port: kafkaPort }),
        onProduce: () => {
          if (!holdNext) return 'forward';
          holdNext = false;
          return 'drop-answer';
        },
        onAnswerDropped: () => answerHeld?.(),
      });
      cleanups.push(() => proxy.close());

      const kafka = new Kafka({
        clientId: 'kill-test',
        brokers: [proxy.broker],
        logLevel: logLevel.NOTHING,
        connectionTimeout: 1_000,
        requestTimeout: 5_000,
        // Long enough to span a restart: kafkajs goes on retrying while the process is down.
        retry: { retries: 30, initialRetryTime: 100, maxRetryTime: 500 },
      });
      const producers: Producer[] = [];
      const newProducer = async (): Promise<Producer> => {
        const producer = kafka.producer({
          idempotent: true,
          maxInFlightRequests: 1,
          createPartitioner: Partitioners.DefaultPartitioner,
        });
        producers.push(producer);
        cleanups.push(() => producer.disconnect());
        await producer.connect();
        return producer;
      };
      let producer = await newProducer();

      const values = new Map<string, string>();
      const acked = new Set<string>();
      const failed = new Set<string>();
      const failures: string[] = [];
      const counts: CycleCounts[] = [];

      for (let cycle = 1; cycle <= CYCLES; cycle++) {
        const count: CycleCounts = {
          cycle,
          sent: 0,
          ackedBeforeKill: 0,
          acked: 0,
          failed: 0,
          killedAfterMs: 0,
          inFlightOnDisk: 0,
        };
        counts.push(count);
        let killed = false;
        const started = Date.now();
        // Once this many of the cycle's records are acknowledged: in cycle 1, kill at once (the
        // loop has its next send in flight by then, written or not); in the later cycles, hold
        // the answer to the next Produce and kill once the listener has answered it (written).
        const killAt = random.int(20, RECORDS_PER_CYCLE - 60);
        const holding = cycle > 1;
        let reachedKillAt!: () => void;
        const killPoint = new Promise<void>((resolve) => {
          let armed = false;
          reachedKillAt = () => {
            if (armed) return;
            armed = true;
            if (holding) holdNext = true;
            else resolve();
          };
          answerHeld = holding ? resolve : null;
        });
        const sending = (async () => {
          for (let n = 0; n < RECORDS_PER_CYCLE;) {
            if (Date.now() > deadline)
              throw new Error(
                `cycle ${cycle}: over the time cap; ${count.sent} sent, ${count.acked} acked, ${failures.length} failures: ${failures.slice(0, 4).join(' | ')}`,
              );
            const size = Math.min(random.int(1, RECORDS_PER_SEND_MAX), RECORDS_PER_CYCLE - n);
            const messages = Array.from({ length: size }, (_, i) => {
              const key = `c${cycle}-${n + i}`;
              const value = JSON.stringify({ cycle, n: n + i, note: `record ${n + i} ✓` });
              values.set(key, value);
              return { key, value };
            });
            n += size;
            count.sent += size;
            try {
              await producer.send({ topic: TOPIC, acks: -1, messages });
              for (const { key } of messages) acked.add(key);
              count.acked += size;
              if (!killed) count.ackedBeforeKill += size;
              if (count.acked >= killAt) reachedKillAt();
            } catch (error) {
              for (const { key } of messages) failed.add(key);
              count.failed += size;
              failures.push(`cycle ${cycle}: ${(error as Error).message}`);
              // The failed batch's sequence is spent or not: only a new producer id is safe.
              await producer.disconnect().catch(() => undefined);
              producer = await newProducer();
            }
          }
        })();
        await Promise.race([killPoint, sending]);
        killed = true;
        count.killedAfterMs = Date.now() - started;
        expect((await node.kill('SIGKILL')).signal).toBe('SIGKILL');
        answerHeld = null;
        const inFlightOnDisk = [...keysOnDisk(dir.path)].filter(
          (key) => key.startsWith(`c${cycle}-`) && !acked.has(key) && !failed.has(key),
        );
        count.inFlightOnDisk = inFlightOnDisk.length;
        await sleep(DOWN_MS);
        node = await start();
        await sending;
      }

      const client = await KafkaLogClient.connect({ bootstrap: [`127.0.0.1:${kafkaPort}`] });
      cleanups.push(() => client.close());
      const stored = new Map<string, { value: string; partition: number }[]>();
      for (let partition = 0; partition < PARTITIONS; partition++) {
        const { batches } = await readPartition(client, TOPIC, partition);
        for (const record of recordsOf(batches)) {
          const copies = stored.get(record.key) ?? [];
          copies.push({ value: Buffer.from(record.value!).toString('utf8'), partition });
          stored.set(record.key, copies);
        }
      }
      const failedPresent = [...failed].filter((key) => stored.has(key)).length;
      console.info(
        `kafka-e2e-kill: ${counts
          .map(
            (c) =>
              `cycle ${c.cycle}: killed after ${c.killedAfterMs} ms, ${c.sent} sent, ` +
              `${c.ackedBeforeKill} acked before the kill, ${c.inFlightOnDisk} in flight and on disk ` +
              `at the kill, ${c.acked} acked, ${c.failed} failed`,
          )
          .join('; ')}; ${failedPresent} of ${failed.size} failed records are in the log` +
          (failures.length ? `; failures: ${failures.slice(0, 3).join(' | ')}` : ''),
      );

      const duplicated = [...stored].filter(([, copies]) => copies.length > 1).map(([key]) => key);
      expect(duplicated, 'records in the log more than once').toEqual([]);
      const lost = [...acked].filter((key) => !stored.has(key));
      expect(lost, 'acknowledged records missing from the log').toEqual([]);
      const unknown = [...stored.keys()].filter((key) => !values.has(key));
      expect(unknown).toEqual([]);
      for (const [key, [copy]] of stored) {
        expect(copy).toEqual({ value: values.get(key), partition: partitionFor(key, PARTITIONS) });
      }
      expect(stored.size).toBe(acked.size + failedPresent);
      expect(acked.size + failed.size).toBe(CYCLES * RECORDS_PER_CYCLE);
      for (const c of counts) expect(c.ackedBeforeKill).toBeLessThan(RECORDS_PER_CYCLE);
      // The held answers: a batch on disk at the kill, retried after the restart with the same
      // producer id and sequence, acknowledged once and written once.
      for (const c of counts.slice(1)) expect(c.inFlightOnDisk).toBeGreaterThan(0);
    },
    TEST_CAP_MS + 30_000,
  );
});
