// Proves producer ids are never handed out twice: ids count up from 0, a reopen (after a clean
// stop or a crash, which look the same to the counter) starts past every id handed out before,
// and the reservation of a block is written whole and made durable (fsynced, renamed, directory
// fsynced) before the first id of the block is handed out, and only then.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PRODUCER_ID_BLOCK, ProducerIds } from '../../log-node/producer-ids.js';
import { tempDir, type TempDir } from '../harness/index.js';

const FILE = 'producer-ids.json';

const dirs: TempDir[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const dir of dirs.splice(0)) dir.cleanup();
});

function newDir(): TempDir {
  const dir = tempDir('producer-ids');
  dirs.push(dir);
  return dir;
}

const reservedUpTo = (dataDir: string) =>
  (JSON.parse(fs.readFileSync(path.join(dataDir, FILE), 'utf8')) as { reservedUpTo: number })
    .reservedUpTo;

describe('producer ids', () => {
  it('are never reused across reopens, whether a block was used up or not', () => {
    const dir = newDir();
    const handedOut = new Set<number>();
    let highest = -1;
    // Each session takes a different number of ids: none, a few, a block and more, a block exactly.
    for (const count of [3, 0, PRODUCER_ID_BLOCK + 5, 1, PRODUCER_ID_BLOCK, 2]) {
      const ids = new ProducerIds(dir.path);
      for (let n = 0; n < count; n++) {
        const id = ids.take();
        expect(handedOut.has(id), `id ${id} handed out twice`).toBe(false);
        expect(id, 'ids increase').toBeGreaterThan(highest);
        expect(reservedUpTo(dir.path), `id ${id} is below the durable reservation`).toBeGreaterThan(
          id,
        );
        handedOut.add(id);
        highest = id;
      }
    }
    expect(handedOut.size).toBe(3 + PRODUCER_ID_BLOCK + 5 + 1 + PRODUCER_ID_BLOCK + 2);
    expect([...handedOut].slice(0, 3)).toEqual([0, 1, 2]);
    expect(fs.readdirSync(dir.path)).toEqual([FILE]);
  });

  it('makes the reservation durable before the first id of a block, and writes once per block', () => {
    const dir = newDir();
    const file = path.join(dir.path, FILE);
    const events: string[] = [];
    const fsyncSync = fs.fsyncSync;
    const renameSync = fs.renameSync;
    vi.spyOn(fs, 'fsyncSync').mockImplementation((fd) => {
      events.push('fsync');
      fsyncSync(fd);
    });
    vi.spyOn(fs, 'renameSync').mockImplementation((from, to) => {
      // The file renamed into place already holds the whole reservation.
      const staged = JSON.parse(fs.readFileSync(from, 'utf8')) as { reservedUpTo: number };
      events.push(`rename ${path.basename(String(from))} -> ${path.basename(String(to))}`);
      events.push(`staged ${staged.reservedUpTo}`);
      renameSync(from, to);
    });

    const ids = new ProducerIds(dir.path);
    expect(events, 'opening writes nothing').toEqual([]);
    const first = ids.take();
    events.push(`take ${first}`);
    expect(events).toEqual([
      'fsync',
      `rename ${FILE}.tmp -> ${FILE}`,
      `staged ${PRODUCER_ID_BLOCK}`,
      'fsync',
      'take 0',
    ]);
    expect(reservedUpTo(dir.path)).toBe(PRODUCER_ID_BLOCK);

    events.length = 0;
    for (let id = 1; id < PRODUCER_ID_BLOCK; id++) expect(ids.take()).toBe(id);
    expect(events, 'the rest of the block writes nothing').toEqual([]);
    expect(ids.take()).toBe(PRODUCER_ID_BLOCK);
    expect(events).toEqual([
      'fsync',
      `rename ${FILE}.tmp -> ${FILE}`,
      `staged ${2 * PRODUCER_ID_BLOCK}`,
      'fsync',
    ]);
    expect(fs.existsSync(`${file}.tmp`)).toBe(false);
  });

  it('starts at the reservation after a crash that skipped the rest of a block', () => {
    const dir = newDir();
    const crashed = new ProducerIds(dir.path);
    expect([crashed.take(), crashed.take()]).toEqual([0, 1]);
    // No stop: the process died. The next one starts past every id that may have been handed out.
    const next = new ProducerIds(dir.path);
    expect(next.take()).toBe(PRODUCER_ID_BLOCK);
    expect(reservedUpTo(dir.path)).toBe(2 * PRODUCER_ID_BLOCK);
  });

  it('refuses a producer-ids file it cannot trust rather than risk reusing an id', () => {
    for (const content of [
      '{"reservedUpTo":',
      '{"reservedUpTo":-5}',
      '{"reservedUpTo":1.5}',
      '{}',
    ]) {
      const dir = newDir();
      fs.writeFileSync(path.join(dir.path, FILE), content);
      expect(() => new ProducerIds(dir.path), content).toThrow(/producer-ids\.json is unreadable/);
    }
  });
});
