/**
 * One node at a time on a data directory: two processes appending to the same segment files both
 * acknowledge offset 0 and one of the writes is lost. A node takes DIR/tailbase.lock before it
 * reads anything in DIR and removes it once it has stopped.
 *
 * The lock file names its owner: pid, Linux boot id, the process's start time (in clock ticks
 * since boot) and a random token, so no two lock files ever have the same content. A process
 * killed with SIGKILL leaves its lock behind; the next starter finds that owner gone (no such pid,
 * another boot, or the pid reused by a process started at another time) and takes the lock over.
 * Node has no flock, so the file's existence is the lock: it is written whole under a temporary
 * name and linked into place (link fails if the name exists).
 *
 * Taking over a stale lock must replace exactly the file that was judged stale, and no file
 * operation can do "replace this name if it still holds that file". So starters that found the
 * same stale lock first agree on one of them: each tries to create a claim file named after the
 * stale lock's content (DIR/tailbase.lock.<hash>.<generation>.claim, link fails if it exists).
 * Only the claim's holder replaces the lock, and only after reading that the name still holds
 * that content; the others wait for it and then find its live lock. A holder killed mid-takeover
 * leaves a claim naming a dead process; the next claimant succeeds it at the next generation.
 * Claims for a content are removed once that content has left the name; as no two locks share a
 * content, a late claimant then finds the name changed and backs off.
 *
 * The stale lock is identified by content, not by inode: once it is removed, its inode number is
 * free, and the next lock file created may get it.
 */
import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { currentBootId } from './boot-id.js';

export const DATA_DIR_LOCK_FILE = 'tailbase.lock';

/**
 * How long a starter keeps at it: waiting for another starter's takeover of a stale lock (a few
 * file operations) or meeting a lock file that keeps changing. Then it gives up, naming the owner.
 */
const ACQUIRE_TIMEOUT_MS = 5_000;
/** The pause between looks at a takeover that another starter is carrying out. */
const TAKEOVER_POLL_MS = 2;
/** Fields 3 and 22 of /proc/<pid>/stat, counted from the field after the command name's ')'. */
const STAT_STATE_INDEX = 0;
const STAT_START_TIME_INDEX = 19;
/** A killed process stays a zombie until its parent reaps it: it answers kill(pid, 0) but is gone. */
const DEAD_STATES = new Set(['Z', 'X', 'x']);

export interface LockOwner {
  pid: number;
  bootId: string | null;
  /** The owner's start time in clock ticks since boot; null where /proc cannot tell. */
  startTicks: string | null;
  /** Random, new for every lock taken; absent in lock files written before it was added. */
  token?: string;
}

export class DataDirInUseError extends Error {
  override name = 'DataDirInUseError';
  readonly code = 'data_dir_in_use';
  readonly dir: string;
  readonly ownerPid: number;

  constructor(dir: string, ownerPid: number) {
    super(
      `data directory ${dir} is in use by pid ${ownerPid}; stop that process first ` +
        `(or, if it is not a tailbase node, remove ${path.join(dir, DATA_DIR_LOCK_FILE)})`,
    );
    this.dir = dir;
    this.ownerPid = ownerPid;
  }
}

export interface DataDirLock {
  readonly dir: string;
  /** Removes the lock file (if it is still this lock's); idempotent. */
  release(): void;
}

interface FileId {
  dev: number;
  ino: number;
}

/**
 * Lock files this process holds, by path, with their identity: a second node of this process on
 * the same directory (under any path to it) is refused too.
 */
const heldHere = new Map<string, FileId>();

process.on('exit', () => {
  // A process exiting without stopping its nodes (a failed start, process.exit) is as gone as one
  // killed; removing its locks saves the next starter the stale check.
  for (const [file, id] of heldHere) {
    try {
      removeIfSame(file, id);
    } catch {
      // Left in place, the lock names a pid that is gone: the next starter takes it over.
    }
  }
});

/** Takes the lock on `dir` (creating `dir`), or throws DataDirInUseError naming the owner. */
export function lockDataDir(dir: string): DataDirLock {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, DATA_DIR_LOCK_FILE);
  const content = JSON.stringify(currentOwner()) + '\n';
  const deadline = Date.now() + ACQUIRE_TIMEOUT_MS;
  /** The starter that held the claim on a stale lock when we last looked, if one did. */
  let claimedBy: number | null = null;
  for (;;) {
    if (Date.now() > deadline) {
      if (claimedBy !== null) throw new DataDirInUseError(dir, claimedBy);
      throw new Error(`could not lock data directory ${dir}: its lock file keeps changing`);
    }
    if (claimedBy !== null) pause(TAKEOVER_POLL_MS);
    claimedBy = null;
    let id = tryCreate(file, content);
    if (id === null) {
      const found = readLock(file);
      if (found === null) continue; // removed between our link and our read: try again
      if (found.owner !== null && ownerAlive(found.owner, found.id)) {
        throw new DataDirInUseError(dir, found.owner.pid);
      }
      const takeover = takeOver(file, found.text, content);
      if (takeover.outcome === 'claimed') claimedBy = takeover.by;
      if (takeover.outcome !== 'taken') continue;
      id = takeover.id;
    }
    heldHere.set(file, id);
    let released = false;
    const lockId = id;
    return {
      dir,
      release: () => {
        if (released) return;
        released = true;
        heldHere.delete(file);
        removeIfSame(file, lockId);
      },
    };
  }
}

/** Runs a node's `start` holding the lock on `dir`; a failed start releases it. */
export async function withDataDirLock<T>(
  dir: string,
  start: (lock: DataDirLock) => Promise<T>,
): Promise<T> {
  const lock = lockDataDir(dir);
  try {
    return await start(lock);
  } catch (error) {
    lock.release();
    throw error;
  }
}

function currentOwner(): LockOwner {
  return {
    pid: process.pid,
    bootId: currentBootId(),
    startTicks: procStat(process.pid)?.startTicks ?? null,
    token: randomUUID(),
  };
}

/** Links a complete lock file into place; its identity, or null when a lock file exists. */
function tryCreate(file: string, content: string): FileId | null {
  const temp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  fs.writeFileSync(temp, content, { flag: 'wx' });
  try {
    fs.linkSync(temp, file);
    return fileId(fs.statSync(temp));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return null;
    throw error;
  } finally {
    fs.rmSync(temp, { force: true });
  }
}

/**
 * The lock (or claim) file's identity, content and owner (null owner: torn by a crash); null if
 * it is gone.
 */
function readLock(file: string): { id: FileId; text: string; owner: LockOwner | null } | null {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  try {
    const id = fileId(fs.fstatSync(fd));
    const text = fs.readFileSync(fd, 'utf8');
    return { id, text, owner: parseOwner(text) };
  } finally {
    fs.closeSync(fd);
  }
}

function parseOwner(text: string): LockOwner | null {
  try {
    const value = JSON.parse(text) as Partial<LockOwner>;
    if (!Number.isInteger(value.pid) || (value.pid as number) <= 0) return null;
    return {
      pid: value.pid as number,
      bootId: typeof value.bootId === 'string' ? value.bootId : null,
      startTicks: typeof value.startTicks === 'string' ? value.startTicks : null,
      ...(typeof value.token === 'string' ? { token: value.token } : {}),
    };
  } catch {
    return null;
  }
}

function ownerAlive(owner: LockOwner, id: FileId): boolean {
  if (owner.pid === process.pid) {
    // Our own pid: held by a node of this process, or left by an earlier process that had it.
    return [...heldHere.values()].some((held) => sameFile(held, id));
  }
  return otherProcessAlive(owner);
}

/** Whether the process a lock or claim names (not this one) still runs. */
function otherProcessAlive(owner: LockOwner): boolean {
  const bootId = currentBootId();
  if (owner.bootId !== null && bootId !== null && owner.bootId !== bootId) return false;
  try {
    process.kill(owner.pid, 0);
  } catch (error) {
    // EPERM: the pid runs under another user, so it runs.
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
  }
  const stat = procStat(owner.pid);
  if (stat !== null && DEAD_STATES.has(stat.state)) return false;
  const startTicks = stat?.startTicks ?? null;
  return owner.startTicks === null || startTicks === null || owner.startTicks === startTicks;
}

type Takeover =
  | { outcome: 'taken'; id: FileId }
  /** Another live starter holds the claim on this stale lock and is taking it over. */
  | { outcome: 'claimed'; by: number }
  /** The name no longer holds the stale lock: look again. */
  | { outcome: 'changed' };

/**
 * Replaces the stale lock whose content is `stale` by ours, if this starter wins the claim on it
 * and the name still holds it. See the header comment for why that is one starter at a time.
 */
function takeOver(file: string, stale: string, content: string): Takeover {
  const key = createHash('sha256').update(stale).digest('hex').slice(0, 32);
  const claimName = (generation: number) => `${file}.${key}.${generation}.claim`;
  let generation = 0;
  for (; ; generation++) {
    if (tryCreate(claimName(generation), content) !== null) break;
    const holder = readLock(claimName(generation));
    // Claims on a content go once it has left the name (or when its claimant failed): look again.
    if (holder === null) return { outcome: 'changed' };
    // A claim naming this process is left by an earlier call that failed (a call holds its claim
    // only while it runs, and none runs beside this one) or by a process that had our pid.
    if (holder.owner !== null && holder.owner.pid !== process.pid) {
      if (otherProcessAlive(holder.owner)) return { outcome: 'claimed', by: holder.owner.pid };
    }
    // Its holder died: the next generation's claimant succeeds it.
  }
  // Ours is the only live claim on `stale`, so nothing but us replaces it at the name now: not
  // its owner (dead), not a starter linking a new lock (the name is taken), not another claimant.
  // A dead owner stays dead, so `stale` is not judged again (a pid that has since been reused
  // by an unrelated process would make it look alive).
  const now = readLock(file);
  if (now === null || now.text !== stale) {
    removeClaims(claimName, generation);
    return { outcome: 'changed' };
  }
  let id: FileId;
  try {
    id = replace(file, content);
  } catch (error) {
    // `stale` is still at the name: give our claim up (not its dead predecessors', which keep
    // the next claimant at this generation) so that the next starter can succeed us.
    fs.rmSync(claimName(generation), { force: true });
    throw error;
  }
  removeClaims(claimName, generation);
  return { outcome: 'taken', id };
}

/** Writes a complete lock file and renames it over `file`: the name is never free meanwhile. */
function replace(file: string, content: string): FileId {
  const temp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  fs.writeFileSync(temp, content, { flag: 'wx' });
  try {
    const id = fileId(fs.statSync(temp));
    fs.renameSync(temp, file);
    return id;
  } catch (error) {
    fs.rmSync(temp, { force: true });
    throw error;
  }
}

/** Removes claims 0..last on a stale lock that has left the name (ours and dead holders'). */
function removeClaims(claimName: (generation: number) => string, last: number): void {
  for (let generation = last; generation >= 0; generation--) {
    fs.rmSync(claimName(generation), { force: true });
  }
}

/** Blocks this thread for `ms`: lockDataDir is synchronous, and the wait is a few milliseconds. */
function pause(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function removeIfSame(file: string, id: FileId): void {
  try {
    if (sameFile(fileId(fs.statSync(file)), id)) fs.rmSync(file, { force: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

function fileId(stat: fs.Stats): FileId {
  return { dev: stat.dev, ino: stat.ino };
}

function sameFile(a: FileId, b: FileId): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

/** A process's state letter and start time, from /proc; null where /proc cannot tell. */
function procStat(pid: number): { state: string; startTicks: string | null } | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: fields[STAT_STATE_INDEX], startTicks: fields[STAT_START_TIME_INDEX] ?? null };
  } catch {
    return null;
  }
}
