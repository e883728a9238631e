/**
 * A FileIO (shared/file-io.ts) over node:fs whose disk can be made to fail the way real ones do:
 * fsync answering EIO (the kernel could not write the dirty pages back, and may have dropped
 * them: PostgreSQL's "fsyncgate"), which for a descriptor opened O_DSYNC is the write itself
 * failing after its bytes reached the page cache; and a full disk, where writes stop at the room
 * left (a short write, then ENOSPC) until space is freed.
 */
import fs from 'node:fs';
import { type FileIO, nodeFileIO } from '../../shared/file-io.js';

const { O_DSYNC } = fs.constants;

export class FaultyIO implements FileIO {
  /** fsync and fdatasync answer EIO. */
  failFsync = false;
  /** Writes to a descriptor opened O_DSYNC reach the page cache, then answer EIO. */
  failWriteThrough = false;
  /** Bytes that may still be written; null: unbounded. At 0 every write answers ENOSPC. */
  spaceBytes: number | null = null;
  /** Calls that failed, by errno. */
  readonly failures = { EIO: 0, ENOSPC: 0 };
  private readonly writeThrough = new Set<number>();
  private readonly io: FileIO = nodeFileIO;

  open(path: string, flags: number): number {
    const fd = this.io.open(path, flags);
    if ((flags & O_DSYNC) !== 0) this.writeThrough.add(fd);
    return fd;
  }

  close(fd: number): void {
    this.writeThrough.delete(fd);
    this.io.close(fd);
  }

  read(fd: number, buffer: Buffer, offset: number, length: number, position: number): number {
    return this.io.read(fd, buffer, offset, length, position);
  }

  readAsync(fd: number, buffer: Buffer, offset: number, length: number, position: number) {
    return this.io.readAsync(fd, buffer, offset, length, position);
  }

  write(fd: number, bytes: Uint8Array, position: number): number {
    const room = this.room(bytes.length);
    const written = this.io.write(fd, bytes.subarray(0, room), position);
    this.afterWrite(fd, room, written);
    return written;
  }

  async writevAsync(fd: number, buffers: readonly Buffer[], position: number) {
    const bytes = Buffer.concat(buffers);
    const room = this.room(bytes.length);
    const { bytesWritten } = await this.io.writevAsync(fd, [bytes.subarray(0, room)], position);
    this.afterWrite(fd, room, bytesWritten);
    return { bytesWritten };
  }

  fsync(fd: number): void {
    this.syncFault();
    this.io.fsync(fd);
  }

  fdatasync(fd: number): void {
    this.syncFault();
    this.io.fdatasync(fd);
  }

  async fdatasyncAsync(fd: number): Promise<void> {
    this.syncFault();
    await this.io.fdatasyncAsync(fd);
  }

  ftruncate(fd: number, sizeBytes: number): void {
    this.io.ftruncate(fd, sizeBytes);
  }

  fstat(fd: number): fs.Stats {
    return this.io.fstat(fd);
  }

  readFile(path: string): Buffer {
    return this.io.readFile(path);
  }

  exists(path: string): boolean {
    return this.io.exists(path);
  }

  readdir(path: string): string[] {
    return this.io.readdir(path);
  }

  mkdir(path: string): void {
    if (this.spaceBytes !== null && this.spaceBytes <= 0) throw this.fault('ENOSPC');
    this.io.mkdir(path);
  }

  rename(from: string, to: string): void {
    this.io.rename(from, to);
  }

  unlink(path: string): void {
    this.io.unlink(path);
  }

  utimes(path: string, atime: Date, mtime: Date): void {
    this.io.utimes(path, atime, mtime);
  }

  fsyncDir(path: string): void {
    this.syncFault();
    this.io.fsyncDir(path);
  }

  /**
   * How much of a write of `length` bytes fits, taken from the room at once (so writes in flight
   * together never share it); throws ENOSPC when nothing does.
   */
  private room(length: number): number {
    if (this.spaceBytes === null || length === 0) return length;
    if (this.spaceBytes <= 0) throw this.fault('ENOSPC');
    const room = Math.min(length, this.spaceBytes);
    this.spaceBytes -= room;
    return room;
  }

  /** Gives back what a write took and did not write. */
  private afterWrite(fd: number, room: number, written: number): void {
    if (this.spaceBytes !== null) this.spaceBytes += room - written;
    if (this.failWriteThrough && this.writeThrough.has(fd)) throw this.fault('EIO');
  }

  private syncFault(): void {
    if (this.failFsync) throw this.fault('EIO');
  }

  private fault(code: 'EIO' | 'ENOSPC'): Error {
    this.failures[code]++;
    const message = code === 'EIO' ? 'input/output error' : 'no space left on device';
    return Object.assign(new Error(`${code}: ${message} (injected)`), { code });
  }
}
