import { afterAll } from 'vitest';
import type { RunningLogNode } from '../../log-node/index.js';
import type { RunningServeNode } from '../../serve-node/index.js';
import { tempDir } from './temp-dir.js';

/** Temp directories for a log-node and a serve-node, both stopped and removed after the file. */
export function logAndServeNodes(name: string) {
  const nodes = {
    logDir: tempDir(`${name}-log`),
    serveDir: tempDir(`${name}-serve`),
    logNode: undefined as RunningLogNode | undefined,
    serveNode: undefined as RunningServeNode | undefined,
  };
  afterAll(async () => {
    await nodes.serveNode?.stop();
    await nodes.logNode?.stop();
    nodes.serveDir.cleanup();
    nodes.logDir.cleanup();
  });
  return nodes;
}
