// Proves a real full disk is answered as faulty-io.ts's is: a spawned `tailbase log-node` whose
// data directory is a small tmpfs (mounted here; root only) appends until the file system is
// full, then answers 507 disk_full with nothing kept, keeps serving reads, takes writes again once
// a file beside it is deleted, and after kill -9 restarts with every acknowledged append.
// Where the mount is refused it skips and says why, unless TAILBASE_REQUIRE_TMPFS=1 (as .ci/run
// sets, running as root): then it fails, so CI never passes it by skipping. The appends and reads
// travel by the log-node's Kafka listener.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { TailbaseError } from '../../shared/errors.js';
import { AppendHistory } from '../harness/append-history.js';
import {
  kafkaFace,
  seededRandom,
  spawnNode,
  type SpawnedNode,
  tempDir,
  type TempDir,
} from '../harness/index.js';

const TOPIC = 'full';
/** The file system's size, and a file that takes part of it until the test deletes it. */
const TMPFS_BYTES = 1024 * 1024;
const BALLAST_BYTES = 256 * 1024;
/** Appends before the disk must have filled (about 6.6 KiB each on 1 MiB). */
const APPENDS_MAX = 400;
const TMPFS_REQUIRED = process.env.TAILBASE_REQUIRE_TMPFS === '1';

let dir: TempDir | null = null;
let mounted: string | null = null;
let node: SpawnedNode | null = null;
afterEach(async () => {
  await node?.kill();
  node = null;
  if (mounted !== null) execFileSync('umount', [mounted]);
  mounted = null;
  dir?.cleanup();
  dir = null;
});

/** Mounts a tmpfs of `bytes` at `at`; the error when this process may not (not root, no mount). */
function mountTmpfs(at: string, bytes: number): string | null {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${bytes}`, 'tmpfs', at], { stdio: 'pipe' });
    return null;
  } catch (error) {
    const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim();
    return stderr || (error as Error).message;
  }
}

describe('log-node on a full tmpfs', () => {
  it('answers 507 disk_full when the file system is full and writes again once there is room', async (context) => {
    dir = tempDir('tmpfs');
    const mountError = mountTmpfs(dir.path, TMPFS_BYTES);
    if (mountError !== null && TMPFS_REQUIRED) {
      throw new Error(`a tmpfs is required here (TAILBASE_REQUIRE_TMPFS=1): ${mountError}`);
    }
    if (mountError !== null) {
      context.skip(`mount failed: ${mountError}`);
    }
    mounted = dir.path;
    const data = path.join(dir.path, 'data');
    const ballast = path.join(dir.path, 'ballast');
    fs.writeFileSync(ballast, Buffer.alloc(BALLAST_BYTES, 1));
    const kafka = await kafkaFace();
    const args = [
      ...['--data', data, '--port', '0', '--partitions', '1', ...kafka.args],
      ...['--segment-bytes-max', String(64 * 1024), '--batch-bytes-max', String(16 * 1024)],
      ...['--cleanup-policy', 'delete'],
    ];
    node = await spawnNode('log-node', args);
    let client = await kafka.connect();
    await client.ensureTopic(TOPIC);
    const random = seededRandom(1507);
    const history = new AppendHistory();
    const batch = () => history.makeBatch(random, 'f', 100, null, { records: 12, padBytes: 500 });

    let refusal: TailbaseError | null = null;
    for (let n = 0; n < APPENDS_MAX && refusal === null; n++) {
      const sent = batch();
      try {
        const ack = await client.append(TOPIC, 0, sent);
        history.acked({ topic: TOPIC, partition: 0, ...ack, sent });
      } catch (error) {
        if (!(error instanceof TailbaseError)) throw error;
        refusal = error;
      }
    }
    expect(refusal, 'the disk filled up').not.toBeNull();
    expect({ status: refusal!.status, code: refusal!.code }).toEqual({
      status: 507,
      code: 'disk_full',
    });
    await history.check(client, TOPIC, 0, true);
    const { endOffset } = await client.read(TOPIC, 0, 0);
    expect(endOffset).toBe(history.acks[history.acks.length - 1].lastOffset + 1);

    fs.rmSync(ballast);
    for (let n = 0; n < 10; n++) {
      const sent = batch();
      const ack = await client.append(TOPIC, 0, sent);
      history.acked({ topic: TOPIC, partition: 0, ...ack, sent });
    }
    await node.kill();
    client.close();
    node = await spawnNode('log-node', args);
    client = await kafka.connect();
    expect(await history.check(client, TOPIC, 0, true)).toBe(history.acks.length);
    client.close();
    console.info(
      `full tmpfs: ${history.acks.length} appends acknowledged, refused with ${refusal!.status} ${refusal!.code} at ${endOffset} records`,
    );
  });
});
