/** Picks the load client: wrk when installed, else the slower node:http fallback. */
import { runNodeLoad } from './http-load.js';
import { runWrk, wrkInstalled } from './wrk.js';
import type { WrkResult, WrkRun } from './wrk.js';

export type LoadClient = 'wrk' | 'node';

let installed: boolean | undefined;

export function loadClient(): LoadClient {
  installed ??= wrkInstalled();
  return installed ? 'wrk' : 'node';
}

export function runLoad(run: WrkRun): Promise<WrkResult> {
  return loadClient() === 'wrk' ? runWrk(run) : runNodeLoad(run);
}
