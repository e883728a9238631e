// Proves the line between what a producer may append and what the log may hold: an appended
// batch must claim dense offsets and sane timestamps or it is refused before anything is written.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BATCH_CRC_START, encodeBatch, type LogRecord } from '../../shared/batch-codec.js';
import { crc32c } from '../../shared/crc32c.js';
import { HttpLogClient } from '../../shared/log-client.js';
import { createLogger } from '../../shared/logger.js';
import { encodeFrames } from '../../shared/partition-frames.js';
import { type LogNodeOptions, type RunningLogNode, startLogNode } from '../../log-node/index.js';
import { tempDir, type TempDir } from '../harness/index.js';

const logger = createLogger('test', 'silent');
const T0 = 1_800_000_000_000;

const open: { node: RunningLogNode; dir: TempDir }[] = [];
const dirs: TempDir[] = [];
afterEach(async () => {
  for (const { node } of open.splice(0)) await node.stop();
  for (const dir of dirs.splice(0)) dir.cleanup();
});

async function start(dir: TempDir, options: Omit<LogNodeOptions, 'dataDir'> = {}) {
  const node = await startLogNode({
    dataDir: dir.path,
    port: 0,
    partitions: 1,
    logger,
    cleanerIntervalMs: 3_600_000,
    ...options,
  });
  open.push({ node, dir });
  return { node, client: new HttpLogClient(node.url) };
}

function newDir(prefix: string): TempDir {
  const dir = tempDir(prefix);
  dirs.push(dir);
  return dir;
}

const record = (key: string, valueBytes = 20): LogRecord => ({
  collection: 'c',
  key,
  value: Buffer.from(JSON.stringify('v'.repeat(valueBytes))),
  timestampMs: T0,
});

async function post(url: string, route: string, body: Uint8Array) {
  const response = await fetch(url + route, { method: 'POST', body });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

function segmentBytes(dataDir: string): number {
  const dir = path.join(dataDir, 'partitions', '0');
  return fs
    .readdirSync(dir)
    .filter((name) => name.endsWith('.log'))
    .reduce((sum, name) => sum + fs.statSync(path.join(dir, name)).size, 0);
}

describe("a producer's batch is checked before it is written", () => {
  it('refuses offset gaps and out-of-range timestamps with 400 invalid_batch on both append routes, writing nothing', async () => {
    const dir = newDir('limits-producer');
    const { node, client } = await start(dir);
    const int64Max = encodeBatch([record('ts')]);
    int64Max.writeBigInt64BE(2n ** 63n - 1n, 27);
    int64Max.writeBigInt64BE(2n ** 63n - 1n, 35);
    int64Max.writeUInt32BE(crc32c(int64Max.subarray(BATCH_CRC_START)), 17);
    const cases: [Buffer, string][] = [
      [encodeBatch([record('sparse')], { lastOffsetDelta: 0x7fff_ffff }), 'lastOffsetDelta'],
      [
        encodeBatch([record('a'), record('b')], { offsetDeltas: [0, 5], lastOffsetDelta: 5 }),
        'offsetDelta',
      ],
      [int64Max, 'firstTimestamp'],
      [encodeBatch([{ ...record('old'), timestampMs: -1 }]), 'firstTimestamp'],
    ];
    for (const [bytes, field] of cases) {
      const alone = await post(node.url, '/internal/partitions/0/append', bytes);
      expect(alone, field).toMatchObject({
        status: 400,
        json: { error: { code: 'invalid_batch', field } },
      });
      const framed = await post(
        node.url,
        '/internal/append',
        encodeFrames([{ partition: 0, bytes }]),
      );
      expect(framed, field).toMatchObject({
        status: 200,
        json: {
          partitions: [{ partition: 0, status: 400, error: { code: 'invalid_batch', field } }],
        },
      });
    }
    expect((await client.offsets())[0]).toMatchObject({ logStartOffset: 0, endOffset: 0 });
    expect(segmentBytes(dir.path), 'nothing written').toBe(0);
    expect(await client.append(0, encodeBatch([record('after')]))).toMatchObject({
      baseOffset: 0,
      lastOffset: 0,
    });
  });
});
