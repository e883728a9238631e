// Proves a scan of one file in many calls through a cursor (the cleaner's slices) visits the same
// batches as one call, and reads each byte of the file from disk once: each call goes on inside
// the chunk the last one read rather than reading it again.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { encodeBatch, stampBatch } from '../../shared/batch-codec.js';
import { type FileIO, nodeFileIO } from '../../shared/file-io.js';
import { scanBatches, type ScanCursor, scanCursor } from '../../log-node/batch-scanner.js';
import { tempDir } from '../harness/index.js';

/** node:fs, counting the bytes read. */
function countingIO(): FileIO & { bytesRead: number } {
  const io = {
    ...nodeFileIO,
    bytesRead: 0,
    read(fd: number, buffer: Buffer, offset: number, length: number, position: number) {
      const read = nodeFileIO.read(fd, buffer, offset, length, position);
      io.bytesRead += read;
      return read;
    },
  };
  return io;
}

/** Scans from 0 to the end one batch a call, as slices would; the positions visited. */
function scanInCalls(io: FileIO, fd: number, size: number, cursor?: ScanCursor): number[] {
  const positions: number[] = [];
  let from = 0;
  for (let calls = 0; calls < 10_000 && from < size; calls++) {
    scanBatches(io, fd, { from, until: size, verify: true, cursor }, ({ header, position }) => {
      positions.push(position);
      from = position + header.sizeBytes;
      return false;
    });
  }
  return positions;
}

describe('batch scanner cursor', () => {
  it('visits every batch once over many calls and reads the file once', () => {
    const dir = tempDir('scanner-cursor');
    try {
      const file = path.join(dir.path, '00000000000000000000.log');
      const batches: Buffer[] = [];
      let offset = 0;
      for (let i = 0; i < 400; i++) {
        const records = Array.from({ length: 1 + (i % 7) }, (_, j) => ({
          key: `k${i}-${j}`,
          value: Buffer.from(JSON.stringify({ i, j, pad: '.'.repeat((i * 37) % 900) })),
          timestampMs: 1_800_000_000_000,
        }));
        const batch = encodeBatch(records);
        stampBatch(batch, offset, 0);
        offset += records.length;
        batches.push(batch);
      }
      fs.writeFileSync(file, Buffer.concat(batches));
      const size = fs.statSync(file).size;
      expect(size, 'several chunks of the scanner').toBeGreaterThan(150_000);
      const fd = fs.openSync(file, 'r');
      try {
        const whole: number[] = [];
        scanBatches(nodeFileIO, fd, { until: size, verify: true }, ({ position }) => {
          whole.push(position);
        });
        expect(whole).toHaveLength(batches.length);

        const io = countingIO();
        expect(scanInCalls(io, fd, size, scanCursor(64 * 1024))).toEqual(whole);
        expect(io.bytesRead, 'each byte read once').toBe(size);
      } finally {
        fs.closeSync(fd);
      }
    } finally {
      dir.cleanup();
    }
  });
});
