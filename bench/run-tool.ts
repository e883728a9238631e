/**
 * Runs a command-line tool (wrk, pgbench, redis-benchmark, initdb, psql) to its end and answers
 * what it printed, stdout and stderr interleaved, its last `outputBytesMax` bytes. It answers on
 * `close`, not `exit`: a process may exit before its pipes are drained, and a run that read its
 * output at `exit` under load lost pgbench's summary ("pgbench printed no result").
 */
import { spawn } from 'node:child_process';
import { basename } from 'node:path';

export interface ToolOptions {
  /** Past this the tool is killed and the run fails. */
  timeoutMs: number;
  /** The tail of the output kept, bytes. */
  outputBytesMax?: number;
  user?: { uid: number; gid: number };
  cwd?: string;
  env?: NodeJS.ProcessEnv;
}

const OUTPUT_BYTES_MAX = 1 << 20;
/** How much of the output a failure's message quotes. */
const ERROR_TAIL_CHARS = 2000;

export function runTool(command: string, args: string[], options: ToolOptions): Promise<string> {
  const keepMax = options.outputBytesMax ?? OUTPUT_BYTES_MAX;
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      uid: options.user?.uid,
      gid: options.user?.gid,
      cwd: options.cwd,
      env: options.env ?? process.env,
    });
    let output = '';
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString('utf8')).slice(-keepMax);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, options.timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) return resolve(output);
      const how = timedOut
        ? `was killed after ${options.timeoutMs} ms`
        : `exited with ${code ?? signal}`;
      reject(new Error(`${basename(command)} ${how}: ${output.slice(-ERROR_TAIL_CHARS)}`));
    });
  });
}
