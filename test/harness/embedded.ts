/**
 * `tailbase start` from the built CLI, as a user runs it, on a loopback port of its own choosing
 * (port 0: no port picked here can be taken by another test first) and a temp data directory
 * removed on stop (kept with TAILBASE_TEST_KEEP=1).
 */
import { spawnNode, type SpawnedNode } from './spawn-node.js';
import { tempDir } from './temp-dir.js';

export interface SpawnedEmbedded extends SpawnedNode {
  dataDir: string;
}

export async function spawnEmbedded(
  options: { partitions?: number; args?: string[]; env?: Record<string, string> } = {},
): Promise<SpawnedEmbedded> {
  const data = tempDir('embedded');
  const dataDir = data.path;
  const args = ['--data', dataDir, '--port', '0', ...(options.args ?? [])];
  if (options.partitions !== undefined) args.push('--partitions', String(options.partitions));
  const node = await spawnNode('start', args, {
    env: options.env,
    urlPattern: /tailbase is ready: (https?:\/\/\S+)/,
    readyTimeoutMs: 30_000,
  });
  return {
    ...node,
    dataDir,
    stop: async (timeoutMs?: number) => {
      const status = await node.stop(timeoutMs);
      data.cleanup();
      return status;
    },
  };
}
