// Proves the power-loss model the log-node's power-cut test relies on (test/harness/power-loss-io.ts):
// what an fsync made durable survives every cut, what it did not is dropped, kept or torn (at a
// byte, or in pieces: each sector kept or lost on its own; and each of these happens), a
// crash-safe replace leaves the old file or the new one and never neither, an entry no directory
// fsync covered may vanish, every call after the cut throws, and the same seed makes the same
// choices.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fsyncDir, writeFileAtomic } from '../../shared/durable-files.js';
import { writeAll } from '../../shared/file-io.js';
import { PowerLossIO } from '../harness/power-loss-io.js';
import { SECTOR_BYTES } from '../harness/power-loss-model.js';
import { seededRandom, tempDir, type TempDir } from '../harness/index.js';

const { O_CREAT, O_RDWR } = fs.constants;
const SEEDS = 60;

let dir: TempDir | null = null;
afterEach(() => {
  dir?.cleanup();
  dir = null;
});

/** One scenario on a fresh directory, cut after it ran; answers what the directory holds then. */
function afterCut(seed: number) {
  dir?.cleanup();
  dir = tempDir('power-loss-io');
  const root = dir.path;
  fs.writeFileSync(path.join(root, 'old.json'), 'old');
  const io = new PowerLossIO(seededRandom(seed));
  const synced = io.open(path.join(root, 'synced.log'), O_RDWR | O_CREAT);
  writeAll(io, synced, Buffer.alloc(5000, 'a'), 0);
  io.fsync(synced);
  fsyncDir(root, io);
  writeAll(io, synced, Buffer.alloc(5000, 'b'), 5000);
  writeFileAtomic(path.join(root, 'old.json'), Buffer.from('new'), io);
  // Its data is synced, its entry is not: no directory fsync follows.
  const unnamed = io.open(path.join(root, 'unnamed.log'), O_RDWR | O_CREAT);
  writeAll(io, unnamed, Buffer.from('x'), 0);
  io.fsync(unnamed);
  const tmp = io.open(path.join(root, 'old.json.tmp'), O_RDWR | O_CREAT);
  io.cut();
  expect(() => io.fsync(tmp)).toThrow(/EIO/);
  expect(() => io.readdir(root)).toThrow(/EIO/);
  const choices = io.crash();
  const read = (name: string) =>
    fs.existsSync(path.join(root, name)) ? fs.readFileSync(path.join(root, name)) : null;
  return {
    synced: read('synced.log')!,
    unnamed: read('unnamed.log'),
    old: read('old.json'),
    // Paths relative to the directory, which differs from run to run.
    choices: choices.map((choice) => ({ ...choice, path: path.relative(root, choice.path) })),
  };
}

describe('the power-loss model', () => {
  it('keeps what was synced and drops, keeps or tears the rest, by seed', () => {
    const tails = new Set<string>();
    let unnamedLost = 0;
    for (let seed = 0; seed < SEEDS; seed++) {
      const { synced, unnamed, old } = afterCut(seed);
      expect(synced.subarray(0, 5000).equals(Buffer.alloc(5000, 'a')), `seed ${seed}`).toBe(true);
      const tail = synced.subarray(5000);
      expect(tail.length).toBeLessThanOrEqual(5000);
      expect(
        [...tail].every((byte) => byte === 98 || byte === 0),
        `seed ${seed}`,
      ).toBe(true);
      const zerosOnlyAtTheEnd = [...tail].every((byte, i) => byte === 98 || tail[i + 1] !== 98);
      if (!zerosOnlyAtTheEnd) {
        // Torn in pieces: each sector of the file persisted whole or not at all.
        for (let at = 5120 - 5000; at < tail.length; at += SECTOR_BYTES) {
          const sector = tail.subarray(Math.max(0, at - SECTOR_BYTES), at);
          expect(new Set(sector).size, `seed ${seed}: sector before tail byte ${at}`).toBe(1);
        }
      }
      tails.add(
        tail.length === 0
          ? 'dropped'
          : !zerosOnlyAtTheEnd
            ? 'torn in pieces'
            : tail.length === 5000 && tail[4999] === 98
              ? 'kept'
              : 'torn',
      );
      // The replace was fsynced into its directory: the new content, whatever the seed.
      expect(old?.toString()).toBe('new');
      if (unnamed === null) unnamedLost++;
      else expect(unnamed.toString()).toBe('x');
    }
    expect([...tails].sort()).toEqual(['dropped', 'kept', 'torn', 'torn in pieces']);
    expect(unnamedLost).toBeGreaterThan(0);
    expect(unnamedLost).toBeLessThan(SEEDS);
  });

  it('makes the same choices for the same seed', () => {
    const first = afterCut(7);
    const again = afterCut(7);
    expect(again.choices).toEqual(first.choices);
    expect(again.synced.equals(first.synced)).toBe(true);
  });

  it('leaves the old file or the new one when the cut comes before the directory fsync', () => {
    const contents = new Set<string>();
    for (let seed = 0; seed < SEEDS; seed++) {
      dir?.cleanup();
      dir = tempDir('power-loss-io');
      const file = path.join(dir.path, 'topic.json');
      fs.writeFileSync(file, 'old');
      const io = new PowerLossIO(seededRandom(seed));
      // The cut is the replace's directory fsync (its 5th mutating call, after the rename).
      io.cutAfter(5);
      expect(() => writeFileAtomic(file, Buffer.from('new'), io)).toThrow(/EIO/);
      io.crash();
      contents.add(fs.readFileSync(file, 'utf8'));
    }
    expect([...contents].sort()).toEqual(['new', 'old']);
  });
});
