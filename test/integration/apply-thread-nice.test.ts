// Proves `tailbase start` and `tailbase serve-node` run the serve-node's apply thread
// --apply-thread-nice levels below the process (the threads answering requests keep the process's
// priority), capped at nice 19, and leave every thread at the process's with
// --apply-thread-nice 0, or with --read-threads 0 (the apply thread answers the reads): read from
// /proc, on Linux.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import {
  kafkaFace,
  spawnEmbedded,
  spawnNode,
  tempDir,
  type SpawnedNode,
  type TempDir,
} from '../harness/index.js';

const nodes: SpawnedNode[] = [];
const dirs: TempDir[] = [];
afterAll(async () => {
  for (const node of nodes.reverse()) await node.stop();
  for (const dir of dirs) dir.cleanup();
});

/** Each thread's nice value (field 19 of its stat, after the command name in parentheses). */
function threadNices(pid: number): Map<number, number> {
  const nices = new Map<number, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    nices.set(Number(tid), Number(fields[16]));
  }
  return nices;
}

describe.runIf(existsSync('/proc/thread-self'))('the apply thread of tailbase start', () => {
  it('runs --apply-thread-nice levels below the process, the other threads at its own', async () => {
    const node = await spawnEmbedded({ args: ['--kafka-port', 'off', '--apply-thread-nice', '3'] });
    nodes.push(node);
    const nices = threadNices(node.pid);
    const own = nices.get(node.pid)!;
    const lowered = [...nices].filter(([, nice]) => nice !== own);
    expect(lowered).toHaveLength(1);
    expect(lowered[0][1]).toBe(Math.min(own + 3, 19));
  });

  it('by default 5 levels below; with 0, every thread at the process’s own', async () => {
    const byDefault = await spawnEmbedded({ args: ['--kafka-port', 'off'] });
    nodes.push(byDefault);
    const nices = threadNices(byDefault.pid);
    const own = nices.get(byDefault.pid)!;
    expect([...nices.values()].filter((nice) => nice !== own)).toEqual([Math.min(own + 5, 19)]);

    const none = await spawnEmbedded({ args: ['--kafka-port', 'off', '--apply-thread-nice', '0'] });
    nodes.push(none);
    const all = threadNices(none.pid);
    expect(new Set(all.values())).toEqual(new Set([all.get(none.pid)]));
  });

  it('with --read-threads 0, where the apply thread answers every read, leaves it at the process’s own', async () => {
    const node = await spawnEmbedded({
      args: ['--kafka-port', 'off', '--read-threads', '0', '--apply-thread-nice', '3'],
    });
    nodes.push(node);
    const all = threadNices(node.pid);
    expect(new Set(all.values())).toEqual(new Set([all.get(node.pid)]));
  });
});

describe.runIf(existsSync('/proc/thread-self'))('the apply thread of tailbase serve-node', () => {
  it('runs --apply-thread-nice levels below the process, the other threads at its own', async () => {
    const logDir = tempDir('apply-nice-log');
    const serveDir = tempDir('apply-nice-serve');
    dirs.push(logDir, serveDir);
    const log = await kafkaFace();
    nodes.push(await spawnNode('log-node', ['--data', logDir.path, '--port', '0', ...log.args]));
    const serve = await spawnNode('serve-node', [
      ...['--data', serveDir.path, '--port', '0', '--log', log.url, '--apply-thread-nice', '2'],
    ]);
    nodes.push(serve);
    const nices = threadNices(serve.pid);
    const own = nices.get(serve.pid)!;
    expect([...nices.values()].filter((nice) => nice !== own)).toEqual([Math.min(own + 2, 19)]);
  });
});
