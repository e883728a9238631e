/**
 * V8 CPU profiles (`node --cpu-prof`, one file a thread as it exits) read back: which file is
 * which thread's, and self time by function over a window of the run.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';

const TOP_FUNCTIONS = 25;

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

export interface CpuProfile {
  /** CLOCK_MONOTONIC, µs: process.hrtime's clock. */
  startTime: number;
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  /** Node's thread id of the profile (its file name's): 0 is the main thread. */
  threadId: number;
}

/** Now on the profiles' clock (CLOCK_MONOTONIC), µs. */
export const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);

/** Every profile in `dir`, named by Node `CPU.<date>.<time>.<pid>.<thread id>.<seq>.cpuprofile`. */
export function readProfiles(dir: string): CpuProfile[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => ({
      ...(JSON.parse(readFileSync(join(dir, f), 'utf8')) as Omit<CpuProfile, 'threadId'>),
      threadId: Number(f.split('.').at(-3)),
    }));
}

/**
 * Whether a thread was sampled in code of the file named `file` (which tells a worker's role);
 * a profile holds only the frames its samples caught.
 */
export function ranFile(profile: CpuProfile, file: string): boolean {
  return profile.nodes.some((n) => n.callFrame.url.endsWith(`/${file}`));
}

/**
 * Where a frame's code comes from: a package under node_modules, a folder of tailbase's dist
 * (`tailbase gateway/`), Node's own modules, or V8's and native frames by name (`writev`, `(garbage
 * collector)`).
 */
export function originOf(frame: ProfileNode['callFrame']): string {
  const { url, functionName } = frame;
  const inModules = url.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/);
  if (inModules) return inModules[1];
  const inDist = url.match(/\/dist\/([^/]+)\//);
  if (inDist) return `tailbase ${inDist[1]}/`;
  if (url.startsWith('node:')) return 'node';
  return url === '' ? functionName || '(native)' : 'other';
}

export interface SelfTimes {
  totalMs: number;
  /** Of `totalMs`, the samples V8 marks `(idle)`: the thread waiting for work. */
  idleMs: number;
  top: Array<[string, number]>;
}

/**
 * Self time by function, in ms, heaviest first, of the samples of `profile` taken in [fromUs,
 * toUs) (monotonic µs), so the start of a load can be set beside its end.
 */
export function selfTimes(
  profile: CpuProfile,
  fromUs: number,
  toUs: number,
  /** A sample's name, by its frame or, for a name from its stack, by its node's id. */
  nameOf: (frame: ProfileNode['callFrame'], nodeId: number) => string = functionAt,
): SelfTimes {
  return selfTimesOver(profile, [[fromUs, toUs]], nameOf);
}

/**
 * selfTimes over several windows of a run, and only them (what a run does between its windows,
 * a reference timed in another process, stays out).
 */
export function selfTimesOver(
  profile: CpuProfile,
  windowsUs: ReadonlyArray<readonly [number, number]>,
  /** A sample's name, by its frame or, for a name from its stack, by its node's id. */
  nameOf: (frame: ProfileNode['callFrame'], nodeId: number) => string = functionAt,
): SelfTimes {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const ms = new Map<string, number>();
  let totalMs = 0;
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i] ?? 0;
    if (!windowsUs.some(([fromUs, toUs]) => at >= fromUs && at < toUs)) return;
    const name = nameOf(byId.get(id)!.callFrame, id);
    const delta = (profile.timeDeltas[i] ?? 0) / 1000;
    ms.set(name, (ms.get(name) ?? 0) + delta);
    totalMs += delta;
  });
  // `(idle)` is a native frame: by function or by origin, it keeps its name.
  return {
    totalMs,
    idleMs: ms.get('(idle)') ?? 0,
    top: [...ms.entries()].sort((a, b) => b[1] - a[1]).slice(0, TOP_FUNCTIONS),
  };
}

function functionAt(frame: ProfileNode['callFrame']): string {
  const where = frame.url ? ` ${basename(frame.url)}:${frame.lineNumber + 1}` : '';
  return `${frame.functionName || '(anonymous)'}${where}`;
}

/** Shares of the busy (not idle) samples, so threads that wait a lot compare with busy ones. */
export function printSelfTimes(label: string, times: SelfTimes): void {
  const busyMs = times.totalMs - times.idleMs;
  console.log(
    `${label}: ${(times.totalMs / 1000).toFixed(1)} s of samples, ${(busyMs / 1000).toFixed(1)} s busy; self time (share of busy):`,
  );
  for (const [name, ms] of times.top) {
    if (name === '(idle)') continue;
    const share = ((100 * ms) / busyMs).toFixed(1).padStart(5);
    console.log(`${share}% ${(ms / 1000).toFixed(2).padStart(7)} s  ${name}`);
  }
}

/** The profile of the thread that ran the serve-node's apply (it holds search-store.js frames). */
export function serveProfile(dir: string): CpuProfile | null {
  // The main thread and the read threads read the search store too (key reads here, searches).
  const applies = (profile: CpuProfile) =>
    profile.threadId !== 0 &&
    !ranFile(profile, 'read-node.js') &&
    ranFile(profile, 'search-store.js');
  return readProfiles(dir).find(applies) ?? null;
}
