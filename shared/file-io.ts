/**
 * The file calls the log-node makes, behind one small interface, so that tests can put a disk
 * with other failure modes under a real node: one that loses what was not fsynced at a simulated
 * power cut (test/harness/power-loss-io.ts), or one whose fsync fails or whose disk is full
 * (test/harness/faulty-io.ts). `nodeFileIO` is node:fs, the default and what production runs.
 *
 * Only what the log-node needs: descriptors for segment files (read, write, fsync, truncate),
 * whole-file reads, and the directory operations whose durability a power loss decides (mkdir,
 * create, rename, unlink, and the directory fsync that makes them durable). Positions are always
 * explicit: no call depends on a descriptor's file position.
 */
import fs from 'node:fs';
import { promisify } from 'node:util';

export interface FileIO {
  /** `flags` are numeric (fs.constants): O_CREAT on a missing name creates a directory entry. */
  open(path: string, flags: number): number;
  close(fd: number): void;
  /** Bytes read into buffer[offset..], fewer at the end of the file. */
  read(fd: number, buffer: Buffer, offset: number, length: number, position: number): number;
  readAsync(
    fd: number,
    buffer: Buffer,
    offset: number,
    length: number,
    position: number,
  ): Promise<{ bytesRead: number }>;
  /** Bytes written at `position` (possibly fewer than asked). */
  write(fd: number, bytes: Uint8Array, position: number): number;
  /**
   * The append path: one vectored write at `position`, bytes written (possibly fewer). Node's
   * own promise shape, so node:fs's implementation is fs.writev itself with no wrapper around it.
   */
  writevAsync(
    fd: number,
    buffers: readonly Buffer[],
    position: number,
  ): Promise<{ bytesWritten: number }>;
  fsync(fd: number): void;
  fdatasync(fd: number): void;
  fdatasyncAsync(fd: number): Promise<void>;
  ftruncate(fd: number, sizeBytes: number): void;
  fstat(fd: number): fs.Stats;
  readFile(path: string): Buffer;
  exists(path: string): boolean;
  readdir(path: string): string[];
  /** Creates the directory and any missing parent; each new one is an entry in its parent. */
  mkdir(path: string): void;
  rename(from: string, to: string): void;
  unlink(path: string): void;
  /** Sets a file's times (metadata that no durability decision here depends on). */
  utimes(path: string, atime: Date, mtime: Date): void;
  /** Makes the entries made, renamed or removed in a directory durable. */
  fsyncDir(path: string): void;
}

const readAsync = promisify(fs.read);
const writev = promisify(fs.writev);
const fdatasync = promisify(fs.fdatasync);

/** node:fs, one direct call each. */
export const nodeFileIO: FileIO = {
  open: (path, flags) => fs.openSync(path, flags, 0o644),
  close: (fd) => fs.closeSync(fd),
  read: (fd, buffer, offset, length, position) => fs.readSync(fd, buffer, offset, length, position),
  readAsync: (fd, buffer, offset, length, position) =>
    readAsync(fd, buffer, offset, length, position),
  write: (fd, bytes, position) => fs.writeSync(fd, bytes, 0, bytes.length, position),
  writevAsync: writev as FileIO['writevAsync'],
  fsync: (fd) => fs.fsyncSync(fd),
  fdatasync: (fd) => fs.fdatasyncSync(fd),
  fdatasyncAsync: (fd) => fdatasync(fd),
  ftruncate: (fd, sizeBytes) => fs.ftruncateSync(fd, sizeBytes),
  fstat: (fd) => fs.fstatSync(fd),
  readFile: (path) => fs.readFileSync(path),
  exists: (path) => fs.existsSync(path),
  readdir: (path) => fs.readdirSync(path),
  mkdir: (path) => void fs.mkdirSync(path, { recursive: true }),
  rename: (from, to) => fs.renameSync(from, to),
  unlink: (path) => fs.unlinkSync(path),
  utimes: (path, atime, mtime) => fs.utimesSync(path, atime, mtime),
  fsyncDir: (path) => {
    const fd = fs.openSync(path, 'r');
    try {
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  },
};

/** Writes all of `bytes` at `position`, resuming after a short write. */
export function writeAll(io: FileIO, fd: number, bytes: Uint8Array, position: number): void {
  let written = 0;
  while (written < bytes.length) {
    written += io.write(fd, bytes.subarray(written), position + written);
  }
}

/** Writes all of `buffers` at `position` with writev, resuming after a short write. */
export async function writevAll(
  io: FileIO,
  fd: number,
  buffers: readonly Buffer[],
  position: number,
): Promise<void> {
  const total = buffers.reduce((sum, buffer) => sum + buffer.length, 0);
  for (let written = 0; written < total;) {
    written += (await io.writevAsync(fd, sliceBuffers(buffers, written), position + written))
      .bytesWritten;
  }
}

/** The buffers after the first `skipBytes` bytes of them. */
function sliceBuffers(buffers: readonly Buffer[], skipBytes: number): Buffer[] {
  const out: Buffer[] = [];
  let skip = skipBytes;
  for (const buffer of buffers) {
    if (skip >= buffer.length) {
      skip -= buffer.length;
      continue;
    }
    out.push(skip > 0 ? buffer.subarray(skip) : buffer);
    skip = 0;
  }
  return out;
}

/** Removes a file if it is there (an unlink of a missing name is no error). */
export function unlinkIfExists(io: FileIO, path: string): void {
  try {
    io.unlink(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

/** Whether an error is the errno `code` (ENOENT, ENOSPC, ...). */
export function isErrno(error: unknown, code: string): boolean {
  return (error as NodeJS.ErrnoException | null)?.code === code;
}
