// Proves that an error inside a group-commit round ends that round's appends with an error and
// never leaves the flush loop spinning: a real log-node process whose next segment cannot be
// created (its name is taken, so the roll's open fails) answers the append that rolls, and every
// later one, with 503 partition_failed within a bound, and stays responsive. Each wait is bounded,
// so a node that spins (its event loop starved, no answer ever) fails the test fast. The appends
// and the read travel by the log-node's Kafka listener.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { encodeBatch } from '../../shared/batch-codec.js';
import { TailbaseError } from '../../shared/errors.js';
import { kafkaFace, partitionDirOf, spawnNode, tempDir, type TempDir } from '../harness/index.js';

const TOPIC = 'docs';
const SEGMENT_BYTES_MAX = 4096;
/** How long an answer may take before the node counts as hung. */
const ANSWER_MS_MAX = 5_000;

let dir: TempDir | null = null;
afterEach(() => {
  dir?.cleanup();
  dir = null;
});

/** The call's answer, 'no answer' past ANSWER_MS_MAX. */
async function answerOf<T>(call: Promise<T>): Promise<T | TailbaseError | 'no answer'> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'no answer'>((resolve) => {
    timer = setTimeout(() => resolve('no answer'), ANSWER_MS_MAX);
  });
  try {
    return await Promise.race([
      call.catch((error: unknown) => {
        if (error instanceof TailbaseError) return error;
        throw error;
      }),
      deadline,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

const batch = (n: number) =>
  encodeBatch([{ key: `k${n}`, value: Buffer.from(`{"n":${n}}`), timestampMs: 1_700_000_000_000 }]);

describe('an error inside a group-commit round', () => {
  it('answers the round that failed to roll and every later append with an error, and the node stays responsive', async () => {
    dir = tempDir('round-errors');
    const kafka = await kafkaFace();
    const node = await spawnNode('log-node', [
      '--data',
      dir.path,
      '--port',
      '0',
      '--partitions',
      '1',
      '--segment-bytes-max',
      String(SEGMENT_BYTES_MAX),
      '--batch-bytes-max',
      String(SEGMENT_BYTES_MAX),
      ...kafka.args,
    ]);
    try {
      const client = await kafka.connect();
      const active = path.join(partitionDirOf(dir.path, TOPIC, 0), `${'0'.padStart(20, '0')}.log`);
      let n = 0;
      let endOffset = (await client.append(TOPIC, 0, batch(n++))).lastOffset + 1;
      while (fs.statSync(active).size + batch(n).length <= SEGMENT_BYTES_MAX) {
        endOffset = (await client.append(TOPIC, 0, batch(n++))).lastOffset + 1;
      }
      // The next append rolls; the new segment's name is taken by a directory, so its open fails.
      fs.mkdirSync(
        path.join(partitionDirOf(dir.path, TOPIC, 0), `${String(endOffset).padStart(20, '0')}.log`),
      );
      const answers = await Promise.all(
        [0, 1, 2].map(() => answerOf(client.append(TOPIC, 0, batch(n++)))),
      );
      for (const answer of answers) {
        expect(answer).toBeInstanceOf(TailbaseError);
        expect((answer as TailbaseError).code).toBe('partition_failed');
      }
      const later = await answerOf(client.append(TOPIC, 0, batch(n++)));
      expect(later).toBeInstanceOf(TailbaseError);
      const health = await answerOf(fetch(`${node.url}/healthz`).then((r) => r.status));
      expect(health).toBe(200);
      const read = await answerOf(client.read(TOPIC, 0, 0));
      expect(read).toMatchObject({ endOffset });
      client.close();
    } finally {
      await node.stop();
    }
  }, 60_000);
});
