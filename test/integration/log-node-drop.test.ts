// Proves a topic drop on a real log-node process is crash-safe: killed with SIGKILL right after
// the drop answered, the topic stays gone and the others keep every record; killed at random
// moments while drops are in flight, each topic comes back whole (every record) or not at all;
// a topic created again under a dropped name starts empty, as the next incarnation. The test
// reaches the log-node by its Kafka listener.
import { afterEach, describe, expect, it } from 'vitest';
import { decodeRecords, encodeBatch, iterateBatches } from '../../shared/batch-codec.js';
import type { LogClient } from '../../shared/log-api.js';
import {
  kafkaFace,
  spawnNode,
  type SpawnedNode,
  sleep,
  tempDir,
  type TempDir,
} from '../harness/index.js';

const RECORDS = 20;
const ROUNDS = 4;
let node: SpawnedNode | undefined;
let dir: TempDir | undefined;

afterEach(async () => {
  await node?.kill();
  dir?.cleanup();
  node = undefined;
});

const batchOf = (tag: string, count: number) =>
  encodeBatch(
    Array.from({ length: count }, (_, i) => ({
      key: `${tag}-${i}`,
      value: Buffer.from(`{"n":${i}}`),
      timestampMs: 1_800_000_000_000,
    })),
  );

async function keysOf(client: LogClient, topic: string): Promise<string[]> {
  const read = await client.read(topic, 0, 0, { maxBytes: 1 << 20 });
  return [...iterateBatches(read.batches)].flatMap((batch) =>
    decodeRecords(batch.bytes).map((record) => record.key ?? ''),
  );
}

async function logNodeArgs(dataDir: string) {
  const kafka = await kafkaFace();
  return {
    args: ['--data', dataDir, '--port', '0', '--partitions', '1', ...kafka.args],
    connect: kafka.connect,
  };
}

describe('dropping a topic', () => {
  it('stays dropped after SIGKILL; a topic of the same name starts empty as incarnation 1', async () => {
    dir = tempDir('drop');
    const { args, connect } = await logNodeArgs(dir.path);
    node = await spawnNode('log-node', args);
    let client = await connect();
    await client.append('keep', 0, batchOf('keep', RECORDS));
    await client.append('gone', 0, batchOf('gone', RECORDS));
    await client.deleteTopic('gone');
    await node.kill();
    client.close();
    node = await spawnNode('log-node', args);
    client = await connect();
    const names = (await client.topics()).map((topic) => topic.name);
    expect(names).toContain('keep');
    expect(names).not.toContain('gone');
    expect(await keysOf(client, 'keep')).toHaveLength(RECORDS);
    const again = await client.append('gone', 0, batchOf('again', 1));
    expect(again.baseOffset).toBe(0);
    expect(await keysOf(client, 'gone')).toEqual(['again-0']);
    expect((await client.topics()).find((topic) => topic.name === 'gone')?.incarnation).toBe(1);
    await expect(client.deleteTopic('never')).rejects.toMatchObject({ code: 'unknown_topic' });
    await expect(client.deleteTopic('__tailbase_settings')).rejects.toMatchObject({
      code: 'invalid_topic',
    });
    client.close();
  });

  it('killed while drops are in flight, each topic is whole or gone', async () => {
    dir = tempDir('drop-kill');
    const { args, connect } = await logNodeArgs(dir.path);
    for (let round = 0; round < ROUNDS; round++) {
      node = await spawnNode('log-node', args);
      const client = await connect();
      const topic = `t${round}`;
      await client.append(topic, 0, batchOf(topic, RECORDS));
      const drop = client.deleteTopic(topic).catch(() => undefined);
      await sleep(round * 2);
      await node.kill();
      await drop;
      client.close();
      node = await spawnNode('log-node', args);
      const after = await connect();
      for (let t = 0; t <= round; t++) {
        const listed = (await after.topics()).some(({ name }) => name === `t${t}`);
        if (listed) expect(await keysOf(after, `t${t}`)).toHaveLength(RECORDS);
      }
      after.close();
      await node.kill();
      node = undefined;
    }
  });
});
