/**
 * A partition's recovery point (Kafka keeps one per log for the same reason): how many bytes of
 * the active segment were durable and acknowledged, or checked by a recovery. Recovery reads it to
 * tell a torn write from damaged data: a write in flight at a crash starts at or after every
 * recovery point ever stored, so damage at or past the stored one may be that write, and damage
 * below it is acknowledged data (FORMAT.md, Recovery).
 *
 * It is written off the append path: after a round is durable, one write at a time, the newest
 * value only, and at most once per `intervalMs` (a write per round cost 40% more CPU per ack
 * under load), so a slow disk delays the point and never an ack. A lagging point is safe for
 * availability (it only lies lower); what lags is how much acknowledged data it protects.
 *
 * Two slots a sector apart, written in turn, each with a sequence and a CRC-32C: a write torn by
 * a power cut spoils at most the slot it wrote, and the other still holds the previous point.
 */
import fs from 'node:fs';
import path from 'node:path';
import { crc32c } from '../shared/crc32c.js';
import { type FileIO, isErrno, writeAll, writevAll } from '../shared/file-io.js';

export const RECOVERY_POINT_FILE = 'recovery-point';
/** Where each slot starts: a sector apart, so a torn write of one leaves the other whole. */
const SLOT_STRIDE_BYTES = 512;
const SLOT_BYTES = 36;
const SLOT_MAGIC = 0x5442_5250; // "TBRP"

const { O_CREAT, O_DSYNC, O_RDWR } = fs.constants;

/** What recovery finds: no file (a directory older than recovery points), no whole slot, or one. */
export type StoredRecoveryPoint =
  | { kind: 'missing' }
  | { kind: 'unreadable' }
  | { kind: 'at'; sequence: number; segmentBase: number; endBytes: number };

export function readRecoveryPoint(io: FileIO, dir: string): StoredRecoveryPoint {
  let bytes: Buffer;
  try {
    bytes = io.readFile(path.join(dir, RECOVERY_POINT_FILE));
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return { kind: 'missing' };
    throw error;
  }
  let newest: StoredRecoveryPoint = { kind: 'unreadable' };
  for (const at of [0, SLOT_STRIDE_BYTES]) {
    const slot = decodeSlot(bytes, at);
    if (slot !== null && (newest.kind !== 'at' || slot.sequence > newest.sequence)) newest = slot;
  }
  return newest;
}

/**
 * The byte of the active segment from which damage followed by valid data may be a write cut by
 * a crash, never acknowledged: the stored point when it is the active segment's; 0 when it is an
 * older segment's (the roll's first rounds, before the point moved on) or no slot is whole (a
 * crash while the file was first written); none (Infinity) without the file, whose directory was
 * written before recovery points and gets its first one now.
 */
export function tornWriteFrom(point: StoredRecoveryPoint, activeBase: number): number {
  if (point.kind === 'missing') return Infinity;
  if (point.kind === 'unreadable') return 0;
  if (point.segmentBase === activeBase) return point.endBytes;
  return point.segmentBase < activeBase ? 0 : Infinity;
}

function decodeSlot(
  bytes: Buffer,
  at: number,
): Extract<StoredRecoveryPoint, { kind: 'at' }> | null {
  if (bytes.length < at + SLOT_BYTES) return null;
  if (bytes.readUInt32BE(at) !== SLOT_MAGIC) return null;
  if (crc32c(bytes.subarray(at, at + SLOT_BYTES - 4)) !== bytes.readUInt32BE(at + SLOT_BYTES - 4))
    return null;
  return {
    kind: 'at',
    sequence: Number(bytes.readBigUInt64BE(at + 4)),
    segmentBase: Number(bytes.readBigUInt64BE(at + 12)),
    endBytes: Number(bytes.readBigUInt64BE(at + 20)),
  };
}

function encodeSlot(sequence: number, segmentBase: number, endBytes: number): Buffer {
  const slot = Buffer.alloc(SLOT_BYTES);
  slot.writeUInt32BE(SLOT_MAGIC, 0);
  slot.writeBigUInt64BE(BigInt(sequence), 4);
  slot.writeBigUInt64BE(BigInt(segmentBase), 12);
  slot.writeBigUInt64BE(BigInt(endBytes), 20);
  slot.writeUInt32BE(crc32c(slot.subarray(0, SLOT_BYTES - 4)), SLOT_BYTES - 4);
  return slot;
}

export interface RecoveryPointOptions {
  /** The file is opened O_DSYNC (fsync=always); otherwise each write is followed by fdatasync. */
  writeThrough: boolean;
  /** Background writes are at least this far apart. */
  intervalMs: number;
  /** Where a failed write goes (writeNow's too): the partition decides. */
  onError: (error: Error) => void;
}

interface Point {
  segmentBase: number;
  endBytes: number;
}

/** The writer of one partition's recovery point. */
export class RecoveryPoint {
  private readonly io: FileIO;
  private readonly fd: number;
  private readonly writeThrough: boolean;
  private readonly onError: (error: Error) => void;
  private readonly intervalMs: number;
  private sequence: number;
  private stored: Point | null;
  private wanted: Point | null = null;
  private writing: Promise<void> | null = null;
  /** Ends the pause between two writes at once (a flush). */
  private endPause: (() => void) | null = null;
  private flushing = false;

  private constructor(
    io: FileIO,
    fd: number,
    found: StoredRecoveryPoint,
    options: RecoveryPointOptions,
  ) {
    this.io = io;
    this.fd = fd;
    this.writeThrough = options.writeThrough;
    this.onError = options.onError;
    this.intervalMs = options.intervalMs;
    this.sequence = found.kind === 'at' ? found.sequence : 0;
    this.stored = found.kind === 'at' ? found : null;
  }

  /**
   * Opens (or creates) the file that recovery found as `found`. A new file's directory entry is
   * made durable by the caller, before any append relies on it.
   */
  static open(
    io: FileIO,
    dir: string,
    found: StoredRecoveryPoint,
    options: RecoveryPointOptions,
  ): RecoveryPoint {
    const flags = O_RDWR | O_CREAT | (options.writeThrough ? O_DSYNC : 0);
    const fd = io.open(path.join(dir, RECOVERY_POINT_FILE), flags);
    return new RecoveryPoint(io, fd, found, options);
  }

  /**
   * Stores a point now, durably (recovery's checked end, a clean stop's end); no write may be in
   * flight. A failure goes to onError, as the background writes' do.
   */
  writeNow(segmentBase: number, endBytes: number): void {
    if (this.stored?.segmentBase === segmentBase && this.stored.endBytes === endBytes) return;
    try {
      const { bytes, at } = this.nextSlot(segmentBase, endBytes);
      writeAll(this.io, this.fd, bytes, at);
      if (!this.writeThrough) this.io.fdatasync(this.fd);
      this.stored = { segmentBase, endBytes };
    } catch (error) {
      this.onError(error as Error);
    }
  }

  /** Moves the point to durable, acknowledged bytes, soon: one write at a time, the newest wins. */
  advance(segmentBase: number, endBytes: number): void {
    this.wanted = { segmentBase, endBytes };
    if (this.writing === null) {
      // Cleared in a callback, never inside writeWanted: a write that fails before its first
      // await settles synchronously, and would clear `writing` before it was even set.
      this.writing = this.writeWanted().finally(() => {
        this.writing = null;
      });
    }
  }

  /** Resolves once every point asked for is stored (or its write failed, reported to onError). */
  async flush(): Promise<void> {
    this.flushing = true;
    try {
      this.endPause?.();
      while (this.writing !== null) await this.writing;
    } finally {
      this.flushing = false;
    }
  }

  close(): void {
    this.io.close(this.fd);
  }

  private async writeWanted(): Promise<void> {
    try {
      while (this.wanted !== null) {
        const { segmentBase, endBytes } = this.wanted;
        this.wanted = null;
        if (this.stored?.segmentBase === segmentBase && this.stored.endBytes === endBytes) continue;
        const { bytes, at } = this.nextSlot(segmentBase, endBytes);
        await writevAll(this.io, this.fd, [bytes], at);
        if (!this.writeThrough) await this.io.fdatasyncAsync(this.fd);
        this.stored = { segmentBase, endBytes };
        if (!this.flushing) await this.pause();
      }
    } catch (error) {
      this.wanted = null;
      this.onError(error as Error);
    }
  }

  private pause(): Promise<void> {
    return new Promise((resolve) => {
      const end = () => {
        clearTimeout(timer);
        this.endPause = null;
        resolve();
      };
      const timer = setTimeout(end, this.intervalMs);
      this.endPause = end;
    });
  }

  private nextSlot(segmentBase: number, endBytes: number): { bytes: Buffer; at: number } {
    this.sequence++;
    return {
      bytes: encodeSlot(this.sequence, segmentBase, endBytes),
      at: (this.sequence % 2) * SLOT_STRIDE_BYTES,
    };
  }
}
