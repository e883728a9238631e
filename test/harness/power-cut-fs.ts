/**
 * A directory that loses every write not fsynced when the power is cut: power-cut-fs.c (a FUSE
 * passthrough that holds unsynced writes in memory), compiled here with the system's C compiler
 * and libfuse3 (Debian: fuse3, libfuse3-dev, pkg-config) and mounted over a backing directory.
 * `cut()` drops what was not synced (or, with a seed, keeps a random half of it) and fails later
 * writes; `unmount()` then leaves the backing directory as a machine that lost power would find
 * its disk.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SOURCE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'power-cut-fs.c');
const MOUNT_WAIT_MS_MAX = 5_000;
const UNMOUNT_TRIES_MAX = 50;
const POLL_MS = 20;

export interface PowerCutFs {
  /** Where the stores go: reads and writes pass through to the backing directory. */
  mountpoint: string;
  /** The power cut: every write not fsynced is dropped, and every later one is ignored. */
  cut(): void;
  unmount(): Promise<void>;
}

/**
 * Compiles power-cut-fs.c into `dir`; the binary's path, or why it cannot be built or mounted
 * here (no /dev/fuse, no compiler, no libfuse3).
 */
export function buildPowerCutFs(dir: string): { binary: string } | { error: string } {
  if (!fs.existsSync('/dev/fuse')) return { error: 'no /dev/fuse' };
  const binary = path.join(dir, 'power-cut-fs');
  try {
    const flags = execFileSync('pkg-config', ['--cflags', '--libs', 'fuse3'], { stdio: 'pipe' })
      .toString()
      .trim()
      .split(/\s+/);
    execFileSync('cc', ['-O2', '-Wall', '-o', binary, SOURCE, ...flags], { stdio: 'pipe' });
    return { binary };
  } catch (error) {
    const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim();
    return { error: stderr || (error as Error).message };
  }
}

function mounted(mountpoint: string): boolean {
  return fs
    .readFileSync('/proc/mounts', 'utf8')
    .split('\n')
    .some((line) => line.split(' ')[1] === mountpoint);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * With `writeBackSeed`, the unmount after a cut writes a random half of the unsynced pages (chosen
 * by that seed) to the backing files, as a disk may have written back some before the power went.
 */
export async function mountPowerCutFs(
  binary: string,
  backing: string,
  mountpoint: string,
  options: { writeBackSeed?: number } = {},
): Promise<PowerCutFs> {
  const env =
    options.writeBackSeed === undefined
      ? process.env
      : { ...process.env, POWER_CUT_SEED: String(options.writeBackSeed) };
  const daemon: ChildProcess = spawn(binary, [backing, mountpoint], { stdio: 'ignore', env });
  const exited = new Promise<void>((resolve) => daemon.once('exit', () => resolve()));
  for (const deadline = Date.now() + MOUNT_WAIT_MS_MAX; !mounted(mountpoint);) {
    if (Date.now() > deadline || daemon.exitCode !== null) {
      daemon.kill('SIGKILL');
      throw new Error(`power-cut-fs did not mount ${mountpoint} within ${MOUNT_WAIT_MS_MAX} ms`);
    }
    await sleep(POLL_MS);
  }
  return {
    mountpoint,
    cut: () => {
      daemon.kill('SIGUSR1');
    },
    unmount: async () => {
      // Busy while a killed process's files are still being closed: tried again, briefly.
      for (let tries = 0; mounted(mountpoint); tries++) {
        try {
          execFileSync('fusermount3', ['-u', mountpoint], { stdio: 'pipe' });
        } catch (error) {
          if (tries >= UNMOUNT_TRIES_MAX) throw error;
          await sleep(POLL_MS);
        }
      }
      await exited;
    },
  };
}
