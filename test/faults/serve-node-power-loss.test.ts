// Proves the bookkeeping of the stores' no-fsync commits (LMDB and SQLite): while a serve-node runs, a
// marker names this boot; a clean stop flushes and removes it, so a restart keeps the stores; a
// marker left by an earlier boot (a power loss) makes the node roll its stores back to their last
// flush and resume them, saying so in its status, or, with no flush recorded (the stores may be
// torn), start from empty stores and replay the log; either way it ends with every document. The
// power cut itself is test/faults/serve-node-power-cut.test.ts's.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { HttpServeClient } from '../../shared/http-serve-client.js';
import { currentBootId } from '../../shared/boot-id.js';
import { logAndServeNodes } from '../harness/index.js';

const nodes = logAndServeNodes('power-loss');
const MARKER = 'unflushed-boot-id';

const storeDirs = () => nodes.storeDirs();

describe.runIf(currentBootId() !== null)('serve-node stores across a power loss', () => {
  it('keeps its stores after a clean stop and replays after an unflushed earlier boot', async () => {
    const log = await nodes.startLog({ partitions: 2 });
    const waitFor = await nodes.appendFourWords(log);
    const start = () => nodes.startServe();
    const everyDoc = async (serve: HttpServeClient) => {
      const scan = await serve.scan('c', { waitFor, waitMs: 10_000 });
      return scan.items.map((item) => item.key);
    };

    let serve = await start();
    expect(await everyDoc(serve)).toEqual(['a', 'b', 'c', 'd']);
    const [first] = storeDirs();
    expect(fs.readFileSync(path.join(first, MARKER), 'utf8').trim()).toBe(currentBootId());
    await nodes.serveNode!.stop();
    expect(fs.existsSync(path.join(first, MARKER))).toBe(false);
    // The search store's WAL was folded into the file the stop flushed, not left beside it.
    expect(fs.readdirSync(first).filter((file) => file.endsWith('-wal'))).toEqual([]);

    serve = await start();
    expect((await serve.status()).lastRebuild).toBeUndefined();
    expect(storeDirs()).toEqual([first]);
    await nodes.serveNode!.stop();

    fs.writeFileSync(path.join(first, MARKER), 'a-boot-before-a-power-loss\n');
    serve = await start();
    let status = await serve.status();
    expect(status.lastRebuild).toBeUndefined();
    expect(
      status.lastResume?.checkpoints.find((c) => c.topic === 'c' && c.partition === 1),
    ).toEqual({ topic: 'c', partition: 1, docs: waitFor[1] + 1, search: waitFor[1] + 1 });
    expect(storeDirs()).toEqual([first]);
    expect(await everyDoc(serve)).toEqual(['a', 'b', 'c', 'd']);
    await nodes.serveNode!.stop();

    // Stores never flushed under an earlier boot: no sync point to roll LMDB back to.
    fs.writeFileSync(path.join(first, MARKER), 'a-boot-before-a-power-loss\n');
    fs.rmSync(path.join(first, 'docs.mdb-sync-point'));
    serve = await start();
    status = await serve.status();
    expect(status.lastRebuild?.reason).toMatch(/restarted while the stores held unflushed writes/);
    expect(storeDirs()).toHaveLength(1);
    expect(storeDirs()[0]).not.toBe(first);
    expect(await everyDoc(serve)).toEqual(['a', 'b', 'c', 'd']);
    expect((await serve.search('c', { q: 'word3' })).hits.map((hit) => hit.key)).toEqual(['d']);
  });
});
