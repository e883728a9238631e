/**
 * A FileIO (shared/file-io.ts) for power-loss tests: every call really happens on the real files,
 * and power-loss-model.ts remembers what an fsync made durable. `cut()` (or the mutating call
 * `cutAfter(n)` names) is the power cut: from then on every call throws EIO, as if the machine
 * were off, and `crash()` rewrites the real directory to a state the cut could leave, with every
 * choice drawn from the seeded generator it was given, so a cut replays from its seed.
 *
 * O_DSYNC is modelled, not passed on: a write to a descriptor opened with it becomes durable when
 * the call returns (for the async vectored write, when its promise settles; a cut in between
 * leaves it unsynced, the window in which a real one may be torn).
 */
import fs from 'node:fs';
import path from 'node:path';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import type { FileIO } from '../../shared/file-io.js';
import {
  applyPowerCut,
  type DataOp,
  DirNode,
  type Entry,
  FileNode,
  type PowerLossChoice,
} from './power-loss-model.js';
import type { Random } from './random.js';

const { O_CREAT, O_DSYNC, O_TRUNC } = fs.constants;

interface OpenFile {
  node: FileNode;
  dsync: boolean;
}

export class PowerLossIO implements FileIO {
  private readonly random: Random;
  private readonly dirs = new Map<string, DirNode>();
  private readonly nodesByPath = new Map<string, FileNode>();
  private readonly allNodes: FileNode[] = [];
  private readonly fds = new Map<number, OpenFile>();
  private mutations = 0;
  private cutAt = Infinity;
  private frozen = false;
  /** The number of mutating calls made before the cut. */
  mutationsBeforeCut = 0;

  /** Everything already on disk counts as durable: the model starts from a synced disk. */
  constructor(random: Random) {
    this.random = random;
  }

  get isCut(): boolean {
    return this.frozen;
  }

  /** The `n`th mutating call from now (1 = the next) is the cut: it and every later call throw. */
  cutAfter(n: number): void {
    this.cutAt = this.mutations + n;
  }

  cut(): void {
    if (!this.frozen) this.mutationsBeforeCut = this.mutations;
    this.frozen = true;
  }

  /**
   * After the cut, once the node is stopped: closes what it left open and rewrites the real
   * directory to what the power loss left. Returns every choice made.
   */
  crash(): PowerLossChoice[] {
    if (!this.frozen) throw new Error('crash() comes after the cut');
    for (const fd of this.fds.keys()) fs.closeSync(fd);
    this.fds.clear();
    return applyPowerCut(this.dirs, this.allNodes, this.random);
  }

  private check(): void {
    if (this.frozen) throw powerCut();
  }

  private mutate(): void {
    this.check();
    this.mutations++;
    if (this.mutations >= this.cutAt) {
      this.cut();
      throw powerCut();
    }
  }

  private dir(dir: string): DirNode {
    let node = this.dirs.get(dir);
    if (node === undefined) {
      const entries = new Map<string, Entry>();
      for (const dirent of fs.readdirSync(dir, { withFileTypes: true })) {
        const at = path.join(dir, dirent.name);
        entries.set(
          dirent.name,
          dirent.isDirectory() ? { kind: 'dir' } : { kind: 'file', node: this.fileAt(at) },
        );
      }
      node = new DirNode(dir, entries);
      this.dirs.set(dir, node);
    }
    return node;
  }

  /** The file now at `file`: known, or one that was there (durable) before this model began. */
  private fileAt(file: string): FileNode {
    let node = this.nodesByPath.get(file);
    if (node === undefined) {
      node = new FileNode(file, fs.statSync(file).size);
      this.nodesByPath.set(file, node);
      this.allNodes.push(node);
    }
    return node;
  }

  private fileOf(fd: number): OpenFile {
    const open = this.fds.get(fd);
    if (open === undefined) throw Object.assign(new Error(`EBADF: fd ${fd}`), { code: 'EBADF' });
    return open;
  }

  /** A file's last name went away: its durable content must outlive the real file. */
  private unnamed(node: FileNode): void {
    node.keepSnapshot();
    node.path = null;
  }

  open(name: string, flags: number): number {
    const file = path.resolve(name);
    const creates = (flags & O_CREAT) !== 0 && !fs.existsSync(file);
    const truncates = !creates && (flags & O_TRUNC) !== 0;
    if (creates || truncates) this.mutate();
    else this.check();
    const parent = creates ? this.dir(path.dirname(file)) : null;
    const existing = creates ? null : this.fileAt(file);
    if (truncates) existing!.record({ kind: 'truncate', size: 0 });
    const fd = fs.openSync(file, flags & ~O_DSYNC, 0o644);
    let node = existing;
    if (node === null) {
      node = new FileNode(file, 0);
      this.nodesByPath.set(file, node);
      this.allNodes.push(node);
      parent!.pending.push([{ name: path.basename(file), entry: { kind: 'file', node } }]);
    }
    this.fds.set(fd, { node, dsync: (flags & O_DSYNC) !== 0 });
    return fd;
  }

  close(fd: number): void {
    // After the cut a close changes nothing on disk; a descriptor crash() closed is not closed
    // again (its number may be another node's by then).
    if (!this.fds.has(fd)) {
      if (this.frozen) return;
      this.fileOf(fd);
    }
    this.fds.delete(fd);
    fs.closeSync(fd);
  }

  read(fd: number, buffer: Buffer, offset: number, length: number, position: number): number {
    this.check();
    this.fileOf(fd);
    return fs.readSync(fd, buffer, offset, length, position);
  }

  async readAsync(fd: number, buffer: Buffer, offset: number, length: number, position: number) {
    return { bytesRead: this.read(fd, buffer, offset, length, position) };
  }

  write(fd: number, bytes: Uint8Array, position: number): number {
    this.mutate();
    const open = this.fileOf(fd);
    const op: DataOp = { kind: 'write', position, bytes: Buffer.from(bytes) };
    open.node.record(op);
    const written = fs.writeSync(fd, bytes, 0, bytes.length, position);
    if (open.dsync) open.node.committed(op);
    return written;
  }

  async writevAsync(fd: number, buffers: readonly Buffer[], position: number) {
    this.mutate();
    const open = this.fileOf(fd);
    const op: DataOp = { kind: 'write', position, bytes: Buffer.concat(buffers) };
    open.node.record(op);
    const bytesWritten = fs.writeSync(fd, op.bytes, 0, op.bytes.length, position);
    await yieldToLoop();
    this.check();
    if (open.dsync) open.node.committed(op);
    return { bytesWritten };
  }

  fsync(fd: number): void {
    this.mutate();
    const open = this.fileOf(fd);
    open.node.synced(() => fs.readFileSync(`/proc/self/fd/${fd}`), fs.fstatSync(fd).size);
  }

  fdatasync(fd: number): void {
    this.fsync(fd);
  }

  async fdatasyncAsync(fd: number): Promise<void> {
    this.check();
    await yieldToLoop();
    this.fsync(fd);
  }

  ftruncate(fd: number, sizeBytes: number): void {
    this.mutate();
    this.fileOf(fd).node.record({ kind: 'truncate', size: sizeBytes });
    fs.ftruncateSync(fd, sizeBytes);
  }

  fstat(fd: number): fs.Stats {
    this.check();
    this.fileOf(fd);
    return fs.fstatSync(fd);
  }

  readFile(file: string): Buffer {
    this.check();
    return fs.readFileSync(path.resolve(file));
  }

  exists(file: string): boolean {
    this.check();
    return fs.existsSync(file);
  }

  readdir(dir: string): string[] {
    this.check();
    return fs.readdirSync(dir);
  }

  mkdir(dir: string): void {
    this.mutate();
    dir = path.resolve(dir);
    const missing: string[] = [];
    for (let at = path.resolve(dir); !fs.existsSync(at); at = path.dirname(at)) missing.push(at);
    for (const created of missing.reverse()) {
      const parent = this.dir(path.dirname(created));
      fs.mkdirSync(created);
      parent.pending.push([{ name: path.basename(created), entry: { kind: 'dir' } }]);
      this.dirs.set(created, new DirNode(created, new Map()));
    }
  }

  rename(fromName: string, toName: string): void {
    this.mutate();
    const from = path.resolve(fromName);
    const to = path.resolve(toName);
    if (path.dirname(from) !== path.dirname(to)) {
      throw new Error(`power-loss model: rename across directories (${from} -> ${to})`);
    }
    const dir = this.dir(path.dirname(from));
    const moved = this.fileAt(from);
    const replaced = fs.existsSync(to) ? this.fileAt(to) : null;
    if (replaced !== null) this.unnamed(replaced);
    fs.renameSync(from, to);
    this.nodesByPath.delete(from);
    this.nodesByPath.set(to, moved);
    moved.path = to;
    dir.pending.push([
      { name: path.basename(to), entry: { kind: 'file', node: moved } },
      { name: path.basename(from), entry: null },
    ]);
  }

  unlink(name: string): void {
    this.mutate();
    const file = path.resolve(name);
    const dir = this.dir(path.dirname(file));
    const node = this.fileAt(file);
    this.unnamed(node);
    fs.unlinkSync(file);
    this.nodesByPath.delete(file);
    dir.pending.push([{ name: path.basename(file), entry: null }]);
  }

  utimes(file: string, atime: Date, mtime: Date): void {
    this.check();
    fs.utimesSync(file, atime, mtime);
  }

  fsyncDir(dir: string): void {
    this.mutate();
    this.dir(path.resolve(dir)).synced();
  }
}

/** What every call answers after the cut: the machine is off. */
function powerCut(): Error {
  return Object.assign(new Error('EIO: simulated power cut'), { code: 'EIO' });
}
