/**
 * Producer ids that are never handed out twice, across restarts and crashes: a durable counter in
 * `DATA/producer-ids.json` ({reservedUpTo}) reserves a block of ids with an atomic, fsynced write
 * before the first id of the block is handed out, so a crash loses at most the rest of a block.
 */
import path from 'node:path';
import { writeFileAtomic } from '../shared/durable-files.js';
import { type FileIO, isErrno, nodeFileIO } from '../shared/file-io.js';

const PRODUCER_IDS_FILE = 'producer-ids.json';
/** Ids reserved by one durable write. */
export const PRODUCER_ID_BLOCK = 1000;

export class ProducerIds {
  private readonly file: string;
  private next: number;
  private reservedUpTo: number;
  private readonly io: FileIO;

  constructor(dataDir: string, io: FileIO = nodeFileIO) {
    this.io = io;
    this.file = path.join(dataDir, PRODUCER_IDS_FILE);
    let reservedUpTo = 0;
    try {
      const stored = JSON.parse(io.readFile(this.file).toString('utf8')) as {
        reservedUpTo: unknown;
      };
      if (!Number.isSafeInteger(stored.reservedUpTo) || (stored.reservedUpTo as number) < 0) {
        throw new Error(`reservedUpTo is ${String(stored.reservedUpTo)}`);
      }
      reservedUpTo = stored.reservedUpTo as number;
    } catch (error) {
      if (!isErrno(error, 'ENOENT')) {
        throw new Error(`${this.file} is unreadable: ${(error as Error).message}`);
      }
    }
    // Any id below the reservation may have been handed out before a restart.
    this.next = reservedUpTo;
    this.reservedUpTo = reservedUpTo;
  }

  /** The next id; reserves a new block durably first when the current one is used up. */
  take(): number {
    if (this.next >= this.reservedUpTo) {
      const reservedUpTo = this.next + PRODUCER_ID_BLOCK;
      writeFileAtomic(this.file, Buffer.from(JSON.stringify({ reservedUpTo })), this.io);
      this.reservedUpTo = reservedUpTo;
    }
    return this.next++;
  }
}
