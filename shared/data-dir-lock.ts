/**
 * One node at a time on a data directory: two processes appending to the same segment files both
 * acknowledge offset 0 and one of the writes is lost. A node takes DIR/tailbase.lock before it
 * reads anything in DIR and removes it once it has stopped.
 *
 * The lock file names its owner: pid, Linux boot id and the process's start time (in clock ticks
 * since boot). A process killed with SIGKILL leaves its lock behind; the next starter finds that
 * owner gone (no such pid, another boot, or the pid reused by a process started at another time)
 * and takes the lock over. Node has no flock, so the file's existence is the lock: it is written
 * whole under a temporary name and linked into place (link fails if the name exists), and a stale
 * one is moved aside by rename, which exactly one of two racing starters wins.
 */
import fs from 'node:fs';
import path from 'node:path';
import { currentBootId } from './boot-id.js';

export const DATA_DIR_LOCK_FILE = 'tailbase.lock';

/** Rounds of create / find stale / move aside before giving up; two racers settle in two. */
const ACQUIRE_ATTEMPTS_MAX = 8;
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
  for (let attempt = 0; attempt < ACQUIRE_ATTEMPTS_MAX; attempt++) {
    const id = tryCreate(file, content);
    if (id !== null) {
      heldHere.set(file, id);
      let released = false;
      return {
        dir,
        release: () => {
          if (released) return;
          released = true;
          heldHere.delete(file);
          removeIfSame(file, id);
        },
      };
    }
    const found = readLock(file);
    if (found === null) continue; // removed between our link and our read: try again
    if (found.owner !== null && ownerAlive(found.owner, found.id)) {
      throw new DataDirInUseError(dir, found.owner.pid);
    }
    moveAsideIfSame(file, found.id);
  }
  throw new Error(`could not lock data directory ${dir}: its lock file keeps changing`);
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

/** The lock file's identity and owner (null owner: torn by a crash); null if it is gone. */
function readLock(file: string): { id: FileId; owner: LockOwner | null } | null {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  try {
    const id = fileId(fs.fstatSync(fd));
    return { id, owner: parseOwner(fs.readFileSync(fd, 'utf8')) };
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

/**
 * Moves a stale lock file out of the way, but only the one that was judged stale: if a racing
 * starter replaced it with its own live lock in between, that lock is linked back into place.
 * Between the move and the link back the name is free; only a third starter arriving in that
 * instant could take it too (then the link back fails), which two racers never meet.
 */
function moveAsideIfSame(file: string, stale: FileId): void {
  const aside = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.stale`;
  try {
    fs.renameSync(file, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return; // another starter moved it
    throw error;
  }
  try {
    if (!sameFile(fileId(fs.statSync(aside)), stale)) {
      try {
        fs.linkSync(aside, file);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
    }
  } finally {
    fs.rmSync(aside, { force: true });
  }
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
