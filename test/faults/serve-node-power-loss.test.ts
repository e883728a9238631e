// Proves the stores' no-fsync commits (LMDB and SQLite) are safe: while a serve-node runs, a marker names
// this boot; a clean stop flushes and removes it, so a restart keeps the stores; a marker left by
// an earlier boot (a power loss: the stores may be torn) makes the node start from empty stores and
// replay the log, saying why in its status, and it ends with every document.
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
    const status = await serve.status();
    expect(status.lastRebuild?.reason).toMatch(/restarted while the stores held unflushed writes/);
    expect(storeDirs()).toHaveLength(1);
    expect(storeDirs()[0]).not.toBe(first);
    expect(await everyDoc(serve)).toEqual(['a', 'b', 'c', 'd']);
    expect((await serve.search('c', { q: 'word3' })).hits.map((hit) => hit.key)).toEqual(['d']);
  });
});
