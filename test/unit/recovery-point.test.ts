// Proves the recovery point's file: the newest whole slot wins, a slot spoiled by a torn write
// leaves the other one, and what recovery makes of each state (the active segment's point as
// stored, 0 for an older segment's or no whole slot, none without the file).
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { nodeFileIO } from '../../shared/file-io.js';
import {
  RECOVERY_POINT_FILE,
  RecoveryPoint,
  readRecoveryPoint,
  tornWriteFrom,
} from '../../log-node/recovery-point.js';
import { tempDir, type TempDir } from '../harness/index.js';

let dir: TempDir | null = null;
afterEach(() => {
  dir?.cleanup();
  dir = null;
});

const fail = (error: Error) => {
  throw error;
};

describe('the recovery point', () => {
  it('keeps the newest whole slot, and the previous one when a write spoils the newest', async () => {
    dir = tempDir('recovery-point');
    const io = nodeFileIO;
    expect(readRecoveryPoint(io, dir.path)).toEqual({ kind: 'missing' });
    expect(tornWriteFrom(readRecoveryPoint(io, dir.path), 0)).toBe(Infinity);

    const point = RecoveryPoint.open(
      io,
      dir.path,
      { kind: 'missing' },
      {
        writeThrough: false,
        intervalMs: 60_000,
        onError: fail,
      },
    );
    point.writeNow(0, 100);
    point.advance(0, 300);
    point.advance(0, 500);
    await point.flush();
    point.close();
    const stored = readRecoveryPoint(io, dir.path);
    expect(stored).toMatchObject({ kind: 'at', segmentBase: 0, endBytes: 500 });
    expect(tornWriteFrom(stored, 0)).toBe(500);
    // A later segment is active: the point is an older segment's, every byte may be torn.
    expect(tornWriteFrom(stored, 42)).toBe(0);

    // A write torn over the newest slot: its CRC fails, the other slot (an older point) stands.
    const file = path.join(dir.path, RECOVERY_POINT_FILE);
    const bytes = fs.readFileSync(file);
    const newestAt = stored.kind === 'at' && stored.sequence % 2 === 1 ? 512 : 0;
    bytes[newestAt + 30] ^= 0xff;
    fs.writeFileSync(file, bytes);
    const older = readRecoveryPoint(io, dir.path);
    expect(older).toMatchObject({ kind: 'at', segmentBase: 0 });
    expect(older.kind === 'at' && older.endBytes < 500).toBe(true);

    // Both spoiled (a crash while the file was first written): no point, every byte may be torn.
    bytes[512 - newestAt + 30] ^= 0xff;
    fs.writeFileSync(file, bytes);
    expect(readRecoveryPoint(io, dir.path)).toEqual({ kind: 'unreadable' });
    expect(tornWriteFrom({ kind: 'unreadable' }, 0)).toBe(0);
  });
});
