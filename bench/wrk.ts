/**
 * HTTP load from wrk, a native client: on two cores a Node.js client would saturate before the
 * server does. A Lua script cycles through pre-encoded request bodies (one per path) and prints
 * wrk's summary as JSON. Debian package: `wrk`.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runTool } from './run-tool.js';
import type { LatencySummary } from './types.js';

const REQUEST_TIMEOUT_S = 10;
const MARKER = 'WRKJSON ';

const SCRIPT = `
local requests = {}
local count = 0
local next_index = 0

function init(args)
  local method = args[1]
  local content_type = args[2]
  for k = 3, #args, 2 do
    local body = nil
    if args[k + 1] ~= "-" then
      local f = assert(io.open(args[k + 1], "rb"))
      body = f:read("*a")
      f:close()
    end
    count = count + 1
    requests[count] = wrk.format(method, args[k], { ["content-type"] = content_type }, body)
  end
  next_index = math.random(count) - 1
end

function request()
  next_index = (next_index % count) + 1
  return requests[next_index]
end

function done(summary, latency, requests)
  io.write(string.format(
    '${MARKER}{"requests":%d,"durationUs":%d,"bytes":%d,"connectErrors":%d,"readErrors":%d,' ..
    '"writeErrors":%d,"statusErrors":%d,"timeouts":%d,"p50Us":%d,"p99Us":%d,"maxUs":%d}\\n',
    summary.requests, summary.duration, summary.bytes, summary.errors.connect,
    summary.errors.read, summary.errors.write, summary.errors.status, summary.errors.timeout,
    latency:percentile(50), latency:percentile(99), latency.max))
end
`;

export interface WrkTarget {
  path: string;
  /** The request body, sent as is on every request to this path; omit for none. */
  body?: Uint8Array;
}

export interface WrkRun {
  baseUrl: string;
  method: 'GET' | 'POST' | 'PUT';
  contentType?: string;
  targets: WrkTarget[];
  connections: number;
  threads: number;
  durationS: number;
}

export interface WrkResult {
  requests: number;
  durationS: number;
  requestsPerSec: number;
  errors: number;
  latency: LatencySummary;
}

export function wrkInstalled(): boolean {
  return spawnSync('wrk', ['--version'], { stdio: 'ignore' }).error === undefined;
}

interface WrkSummary {
  requests: number;
  durationUs: number;
  bytes: number;
  connectErrors: number;
  readErrors: number;
  writeErrors: number;
  statusErrors: number;
  timeouts: number;
  p50Us: number;
  p99Us: number;
  maxUs: number;
}

export async function runWrk(run: WrkRun): Promise<WrkResult> {
  const dir = mkdtempSync(join(tmpdir(), 'tailbase-wrk-'));
  try {
    const script = join(dir, 'bench.lua');
    writeFileSync(script, SCRIPT);
    const scriptArgs = [run.method, run.contentType ?? 'application/octet-stream'];
    run.targets.forEach((target, i) => {
      let bodyFile = '-';
      if (target.body !== undefined) {
        bodyFile = join(dir, `body-${i}.bin`);
        writeFileSync(bodyFile, target.body);
      }
      scriptArgs.push(target.path, bodyFile);
    });
    const args = [
      `-t${Math.max(1, Math.min(run.threads, run.connections))}`,
      `-c${run.connections}`,
      `-d${Math.max(1, Math.round(run.durationS))}s`,
      `--timeout`,
      `${REQUEST_TIMEOUT_S}s`,
      '-s',
      script,
      run.baseUrl,
      '--',
      ...scriptArgs,
    ];
    // wrk ends on its own after the duration; a hung one is killed past this.
    const output = await runTool('wrk', args, {
      timeoutMs: (run.durationS + REQUEST_TIMEOUT_S + 30) * 1000,
    });
    const line = output.split('\n').find((l) => l.startsWith(MARKER));
    if (line === undefined) throw new Error(`wrk printed no summary: ${output.slice(-2000)}`);
    const s = JSON.parse(line.slice(MARKER.length)) as WrkSummary;
    const durationS = s.durationUs / 1e6;
    return {
      requests: s.requests,
      durationS,
      requestsPerSec: (s.requests - s.statusErrors) / durationS,
      errors: s.connectErrors + s.readErrors + s.writeErrors + s.statusErrors + s.timeouts,
      latency: {
        p50Ms: s.p50Us / 1000,
        p99Ms: s.p99Us / 1000,
        maxMs: s.maxUs / 1000,
        count: s.requests,
      },
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
