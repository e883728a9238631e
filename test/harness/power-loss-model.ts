/**
 * What a disk has made durable, as a power loss sees it (the model under power-loss-io.ts): per
 * file, the content as of its last fsync and the writes and truncations since; per directory, the
 * entries as of its last fsync and the creates, renames, unlinks and mkdirs since. At a power cut
 * every unsynced operation is dropped, kept or torn by a seeded choice, and the real directory is
 * rewritten to the result.
 *
 * The choices are those a POSIX file system may make and that LazyFS and TigerBeetle's simulated
 * storage inject: a file's unsynced writes persist as a prefix of their sequence, the last one
 * possibly torn: cut at any byte (inside a 4 KiB page too), with the file's new size persisted but
 * not its data (zeros), or in pieces, each 512-byte sector persisted or not on its own (its start
 * lost and its end kept, as LazyFS's torn writes); a directory's unsynced operations persist as a prefix of their sequence,
 * each rename whole. Synced data and entries always survive.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Random } from './random.js';

export type DataOp =
  { kind: 'write'; position: number; bytes: Buffer } | { kind: 'truncate'; size: number };

/** One file (an inode): its durable content and what was done to it since. */
export class FileNode {
  /** The real path that holds it now; null once its last name is gone. */
  path: string | null;
  /** Bytes of durable content; while `snapshot` is null they are the real file's first bytes. */
  durableSize: number;
  /** The durable content, once the real file no longer holds it as a prefix. */
  snapshot: Buffer | null = null;
  pending: DataOp[] = [];

  constructor(file: string, durableSize: number) {
    this.path = file;
    this.durableSize = durableSize;
  }

  /** Records an operation about to be applied to the real file. */
  record(op: DataOp): void {
    const touchesDurable =
      op.kind === 'write' ? op.position < this.durableSize : op.size < this.durableSize;
    if (touchesDurable) this.keepSnapshot();
    this.pending.push(op);
  }

  /** Copies the durable content out of the real file before it stops holding it. */
  keepSnapshot(): void {
    if (this.snapshot !== null) return;
    this.snapshot = this.path === null ? Buffer.alloc(0) : readPrefix(this.path, this.durableSize);
  }

  /** An fsync: everything written is durable; `current` reads the file as it is now. */
  synced(current: () => Buffer, sizeBytes: number): void {
    this.pending = [];
    if (this.path === null) {
      this.snapshot = current();
    } else {
      this.snapshot = null;
    }
    this.durableSize = sizeBytes;
  }

  /** One operation made durable on its own (an O_DSYNC write as it returns). */
  committed(op: DataOp): void {
    const at = this.pending.indexOf(op);
    if (at < 0) return;
    this.pending.splice(at, 1);
    if (this.snapshot === null && this.pending.length === 0 && op.kind === 'write') {
      this.durableSize = Math.max(this.durableSize, op.position + op.bytes.length);
      return;
    }
    this.keepSnapshot();
    this.snapshot = apply(this.snapshot!, op);
    this.durableSize = this.snapshot.length;
  }

  durableContent(): Buffer {
    return this.snapshot ?? readPrefix(this.path!, this.durableSize);
  }
}

export type Entry = { kind: 'file'; node: FileNode } | { kind: 'dir' };

/** Changes to a directory's names that a rename or an unlink makes at once. */
export type DirOp = { name: string; entry: Entry | null }[];

/** One directory: its durable entries and the unsynced operations on them. */
export class DirNode {
  readonly path: string;
  durable: Map<string, Entry>;
  pending: DirOp[] = [];

  constructor(dir: string, durable: Map<string, Entry>) {
    this.path = dir;
    this.durable = durable;
  }

  synced(): void {
    this.durable = entriesAfter(this.durable, this.pending);
    this.pending = [];
  }
}

function entriesAfter(durable: Map<string, Entry>, ops: readonly DirOp[]): Map<string, Entry> {
  const entries = new Map(durable);
  for (const op of ops) {
    for (const { name, entry } of op) {
      if (entry === null) entries.delete(name);
      else entries.set(name, entry);
    }
  }
  return entries;
}

function apply(content: Buffer, op: DataOp): Buffer {
  if (op.kind === 'truncate') {
    if (op.size <= content.length) return Buffer.from(content.subarray(0, op.size));
    return Buffer.concat([content, Buffer.alloc(op.size - content.length)]);
  }
  const end = op.position + op.bytes.length;
  const out =
    end > content.length
      ? Buffer.concat([content, Buffer.alloc(end - content.length)])
      : Buffer.from(content);
  op.bytes.copy(out, op.position);
  return out;
}

function readPrefix(file: string, length: number): Buffer {
  const fd = fs.openSync(file, 'r');
  try {
    const bytes = Buffer.alloc(length);
    const read = fs.readSync(fd, bytes, 0, length, 0);
    if (read < length) throw new Error(`${file} is shorter than its durable ${length} bytes`);
    return bytes;
  } finally {
    fs.closeSync(fd);
  }
}

/** Bytes of a page: a torn write is cut at a page boundary or inside a page, half the time each. */
export const PAGE_BYTES = 4096;
/** Bytes of a sector, the unit a write torn in pieces persists or loses whole. */
export const SECTOR_BYTES = 512;

/** What the power cut did to one file or one directory entry, for the test's report. */
export interface PowerLossChoice {
  path: string;
  kind:
    | 'data-dropped'
    | 'data-kept'
    | 'data-prefix-kept'
    | 'data-torn'
    | 'data-torn-zeroed'
    | 'data-torn-sectors'
    | 'entries-reverted'
    | 'entries-partly-kept'
    | 'entries-kept';
  /** Unsynced operations of the file or directory, and how many of them persisted. */
  pending: number;
  kept: number;
  /** A directory's operations that did not persist: `create NAME`, `mkdir NAME`, `rename A B`, `unlink NAME`. */
  reverted?: string[];
}

function describeOp(op: DirOp): string {
  if (op.length === 2) return `rename ${op[1].name} ${op[0].name}`;
  const [{ name, entry }] = op;
  if (entry === null) return `unlink ${name}`;
  return `${entry.kind === 'dir' ? 'mkdir' : 'create'} ${name}`;
}

/** The content a file holds after the cut: its durable content, then a chosen prefix of the rest. */
function contentAfterCut(
  node: FileNode,
  random: Random,
  choices: PowerLossChoice[],
  label: string,
): Buffer {
  let content = node.durableContent();
  const ops = node.pending;
  if (ops.length === 0) return content;
  const kept = random.int(0, ops.length);
  for (const op of ops.slice(0, kept)) content = apply(content, op);
  const torn = kept < ops.length ? ops[kept] : null;
  let kind: PowerLossChoice['kind'] =
    kept === 0 ? 'data-dropped' : kept === ops.length ? 'data-kept' : 'data-prefix-kept';
  if (torn?.kind === 'write' && torn.bytes.length > 1 && random.next() < 0.5) {
    const pieces = sectorsOf(torn.position, torn.bytes.length);
    if (pieces.length > 1 && random.next() < 0.5) {
      content = tearSectors(content, torn, pieces, random);
      kind = 'data-torn-sectors';
    } else {
      const cut = tearAt(torn.position, torn.bytes.length, random);
      const zeroed = random.next() < 0.3;
      const bytes = Buffer.alloc(zeroed ? torn.bytes.length : cut);
      torn.bytes.copy(bytes, 0, 0, cut);
      content = apply(content, { kind: 'write', position: torn.position, bytes });
      kind = zeroed ? 'data-torn-zeroed' : 'data-torn';
    }
  }
  choices.push({ path: label, kind, pending: ops.length, kept });
  return content;
}

/** A write's pieces at the file's sector boundaries: `[start, end)` offsets into the write. */
function sectorsOf(position: number, length: number): [number, number][] {
  const pieces: [number, number][] = [];
  for (let start = 0; start < length;) {
    const end = Math.min(
      length,
      (Math.floor((position + start) / SECTOR_BYTES) + 1) * SECTOR_BYTES - position,
    );
    pieces.push([start, end]);
    start = end;
  }
  return pieces;
}

/**
 * A write torn as LazyFS tears one: each sector persisted or not on its own, at least one of each,
 * so its start may be lost and its end kept. A lost sector keeps what the file held there before
 * (zeros past its old end). The file's new size persisted, or only up to the last sector kept.
 */
function tearSectors(
  content: Buffer,
  torn: Extract<DataOp, { kind: 'write' }>,
  pieces: [number, number][],
  random: Random,
): Buffer {
  const keep = pieces.map(() => random.next() < 0.5);
  const kept = random.int(0, pieces.length - 1);
  keep[kept] = true;
  keep[(kept + random.int(1, pieces.length - 1)) % pieces.length] = false;
  const lastKept = keep.lastIndexOf(true);
  const sizePersisted = random.next() < 0.5;
  const end = torn.position + (sizePersisted ? torn.bytes.length : pieces[lastKept][1]);
  const out = Buffer.alloc(Math.max(content.length, end));
  content.copy(out);
  pieces.forEach(([start, stop], i) => {
    if (keep[i]) torn.bytes.copy(out, torn.position + start, start, stop);
  });
  return out;
}

/** Where a torn write stops, 1..length-1 bytes in: at a page boundary of the file, or anywhere. */
function tearAt(position: number, length: number, random: Random): number {
  const boundaries: number[] = [];
  for (
    let at = (Math.floor(position / PAGE_BYTES) + 1) * PAGE_BYTES;
    at < position + length;
    at += PAGE_BYTES
  ) {
    boundaries.push(at - position);
  }
  if (boundaries.length > 0 && random.next() < 0.5) return random.pick(boundaries);
  return random.int(1, length - 1);
}

/**
 * Rewrites the real tree to a state the power cut could leave. Every content is computed before
 * anything is changed: a file's durable bytes may still be read from the real file it is in.
 */
export function applyPowerCut(
  dirs: ReadonlyMap<string, DirNode>,
  files: readonly FileNode[],
  random: Random,
): PowerLossChoice[] {
  const choices: PowerLossChoice[] = [];
  const contents = new Map<FileNode, Buffer>();
  const finalEntries = new Map<string, Map<string, Entry>>();
  const sortedDirs = [...dirs.values()].sort((a, b) => (a.path < b.path ? -1 : 1));
  for (const dir of sortedDirs) {
    const kept = random.int(0, dir.pending.length);
    finalEntries.set(dir.path, entriesAfter(dir.durable, dir.pending.slice(0, kept)));
    if (dir.pending.length > 0) {
      const kind =
        kept === 0
          ? 'entries-reverted'
          : kept === dir.pending.length
            ? 'entries-kept'
            : 'entries-partly-kept';
      const reverted = dir.pending.slice(kept).map(describeOp);
      choices.push({ path: dir.path, kind, pending: dir.pending.length, kept, reverted });
    }
  }
  const needsWrite = (node: FileNode, at: string) =>
    node.pending.length > 0 || node.snapshot !== null || node.path !== at;
  const contentOf = (node: FileNode, label: string) => {
    let content = contents.get(node);
    if (content === undefined) {
      content = contentAfterCut(node, random, choices, label);
      contents.set(node, content);
    }
    return content;
  };
  for (const dir of sortedDirs) {
    for (const [name, entry] of finalEntries.get(dir.path)!) {
      const at = path.join(dir.path, name);
      if (entry.kind === 'file' && needsWrite(entry.node, at)) contentOf(entry.node, at);
    }
  }
  for (const node of files) {
    if (node.path !== null && !dirs.has(path.dirname(node.path)) && needsWrite(node, node.path)) {
      contentOf(node, node.path);
    }
  }

  const gone = (dir: string): boolean => {
    const parent = path.dirname(dir);
    if (parent === dir) return false;
    const entries = finalEntries.get(parent);
    if (entries !== undefined && !entries.has(path.basename(dir))) return true;
    return gone(parent);
  };
  for (const dir of sortedDirs) {
    if (gone(dir.path)) continue;
    const entries = finalEntries.get(dir.path)!;
    for (const name of fs.readdirSync(dir.path)) {
      if (!entries.has(name))
        fs.rmSync(path.join(dir.path, name), { recursive: true, force: true });
    }
    for (const [name, entry] of entries) {
      const at = path.join(dir.path, name);
      if (entry.kind === 'dir') {
        if (!fs.existsSync(at)) throw new Error(`power cut model: directory ${at} would reappear`);
        continue;
      }
      const content = contents.get(entry.node);
      if (content !== undefined) fs.writeFileSync(at, content);
    }
  }
  for (const node of files) {
    if (node.path === null || dirs.has(path.dirname(node.path)) || gone(path.dirname(node.path)))
      continue;
    const content = contents.get(node);
    if (content !== undefined) fs.writeFileSync(node.path, content);
  }
  return choices;
}
