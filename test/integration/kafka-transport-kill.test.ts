/**
 * A gateway and a serve-node reaching three log-node processes only by the Kafka protocol
 * (`--log kafka://...`), under concurrent writers, while the log-node owning partitions 1 and 4
 * is killed with kill -9 and started again on its data directory and Kafka port: every write
 * the gateway acknowledged is in the log exactly once at the offset it answered, and reads back
 * at its token; no write is in the log twice; every write not acknowledged was answered as
 * refused or unknown (503), never as a success.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { KafkaLogClient } from '../../shared/kafka-log/index.js';
import { freePort } from '../harness/free-port.js';
import { sleep, spawnNode, type SpawnedNode } from '../harness/spawn-node.js';
import { storedKeys } from '../harness/stored-keys.js';
import { tempDir } from '../harness/temp-dir.js';
import { withinMs, writeOutcome, type WriteOutcome } from '../harness/write-outcome.js';
import { call } from './gateway-harness.js';

const PARTITIONS = 6;
const SPLIT = ['0,3', '1,4', '2,5'];
const VICTIM = 1;
const WRITERS = 6;
const COLLECTION = 'killed';
const BEFORE_KILL_MS = 1_500;
const DOWN_MS = 1_000;
const AFTER_RESTART_MS = 2_500;
/** A write's own bound: the gateway answers by then (its append attempts are bounded). */
const WRITE_WAIT_MS_MAX = 30_000;

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

describe('the Kafka transport across a log-node killed with kill -9', () => {
  it('loses no acknowledged write and duplicates none', async () => {
    const dirs = [0, 1, 2, 3].map((i) => tempDir(`kafka-kill-${i}`));
    cleanups.push(() => dirs.forEach((dir) => dir.cleanup()));
    const kafkaPorts = [await freePort(), await freePort(), await freePort()];
    const logArgs = (i: number) => [
      '--data',
      dirs[i].path,
      '--port',
      '0',
      '--partitions',
      String(PARTITIONS),
      '--host-partitions',
      SPLIT[i],
      '--cluster-id',
      '01JFBK3ZQ8Y5V6N7W2X4C9D0E1',
      '--kafka-port',
      String(kafkaPorts[i]),
      '--kafka-peers',
      kafkaPorts
        .filter((_, j) => j !== i)
        .map((port) => `127.0.0.1:${port}`)
        .join(','),
    ];
    const logNodes: SpawnedNode[] = [];
    for (let i = 0; i < 3; i++) logNodes.push(await spawnNode('log-node', logArgs(i)));
    cleanups.push(() => Promise.all(logNodes.map((node) => node.stop())));
    const kafkaUrl = `kafka://${kafkaPorts.map((port) => `127.0.0.1:${port}`).join(',')}`;
    const serve = await spawnNode('serve-node', [
      '--data',
      dirs[3].path,
      '--port',
      '0',
      '--log',
      kafkaUrl,
    ]);
    cleanups.push(() => serve.stop());
    const gateway = await spawnNode('gateway', [
      '--port',
      '0',
      '--log',
      kafkaUrl,
      '--serve',
      serve.url,
    ]);
    cleanups.push(() => gateway.stop());

    const outcomes: WriteOutcome[] = [];
    let writing = true;
    const writer = async (w: number) => {
      for (let n = 0; writing; n++) {
        const key = `w${w}-${n}`;
        const outcome = await writeOutcome(
          key,
          call(gateway.url, 'PUT', `/v1/collections/${COLLECTION}/docs/${key}`, { n }),
        );
        outcomes.push(outcome);
        if (outcome.status !== 200) await sleep(20);
      }
    };
    const writers = Array.from({ length: WRITERS }, (_, w) => writer(w));
    await sleep(BEFORE_KILL_MS);
    await logNodes[VICTIM].kill('SIGKILL');
    await sleep(DOWN_MS);
    logNodes[VICTIM] = await spawnNode('log-node', logArgs(VICTIM));
    const restartedAt = outcomes.length;
    await sleep(AFTER_RESTART_MS);
    writing = false;
    await withinMs(Promise.all(writers), WRITE_WAIT_MS_MAX, 'a write was not answered in time');

    const acked = outcomes.filter((o) => o.status === 200);
    const failed = outcomes.filter((o) => o.status !== 200);
    // Writes went on across the kill, and the ones that failed were told so by a 503.
    expect(acked.length).toBeGreaterThan(WRITERS * 10);
    const victims = (o: WriteOutcome) => o.partition === 1 || o.partition === 4;
    // The kill was felt (writes to its partitions failed), and they were written again after it.
    expect(failed.length).toBeGreaterThan(0);
    expect(outcomes.slice(restartedAt).some((o) => o.status === 200 && victims(o))).toBe(true);
    for (const outcome of failed) expect(outcome.status, JSON.stringify(outcome)).toBe(503);
    process.stdout.write(
      `kill -9 under writes: ${acked.length} acknowledged, ${failed.length} refused or unknown (${[...new Set(failed.map((o) => o.code))].join(', ')})\n`,
    );

    // The log, read back partition by partition over Kafka: each key once at most, each
    // acknowledged key once, at the offset it was answered with.
    const log = await KafkaLogClient.connect({ bootstrap: [`127.0.0.1:${kafkaPorts[0]}`] });
    cleanups.push(() => log.close());
    const stored = await storedKeys(log, COLLECTION, PARTITIONS);
    for (const [key, places] of stored) expect(places, key).toHaveLength(1);
    for (const { key, partition, offset } of acked) {
      expect(stored.get(key), key).toEqual([{ partition, offset }]);
    }
    // A write answered as not stored (the log refused it before taking it) is not in the log.
    for (const { key } of failed.filter((o) => o.code === 'log_unavailable')) {
      expect(stored.get(key), key).toBeUndefined();
    }
    // Every acknowledged write reads back at its own token.
    for (const { key, token } of acked.filter((_, i) => i % 10 === 0)) {
      const read = await call(
        gateway.url,
        'GET',
        `/v1/collections/${COLLECTION}/docs/${key}`,
        undefined,
        {
          'tailbase-token': token!,
        },
      );
      expect(read.status, key).toBe(200);
    }
  }, 120_000);
});
