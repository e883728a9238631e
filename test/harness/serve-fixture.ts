import { afterAll } from 'vitest';
import { startLogNode, type LogNodeOptions, type RunningLogNode } from '../../log-node/index.js';
import {
  startServeNode,
  type RunningServeNode,
  type ServeNodeOptions,
} from '../../serve-node/index.js';
import { HttpLogClient } from '../../shared/log-client.js';
import { createLogger } from '../../shared/logger.js';
import { HttpServeClient } from '../../shared/serve-client.js';
import { tempDir } from './temp-dir.js';

const silent = createLogger('test', 'silent');

/**
 * A log-node and a serve-node over temp directories, each started (silent, any free port) by
 * `startLog` / `startServe` with the test's options on top, both stopped and removed after the
 * file.
 */
export function logAndServeNodes(name: string) {
  const nodes = {
    logDir: tempDir(`${name}-log`),
    serveDir: tempDir(`${name}-serve`),
    logNode: undefined as RunningLogNode | undefined,
    serveNode: undefined as RunningServeNode | undefined,
    async startLog(options: Omit<LogNodeOptions, 'dataDir'> = {}): Promise<HttpLogClient> {
      nodes.logNode = await startLogNode({
        dataDir: nodes.logDir.path,
        port: 0,
        logger: silent,
        ...options,
      });
      return new HttpLogClient(nodes.logNode.url);
    },
    /** On the running log-node; stop the previous serve-node first. */
    async startServe(options: Partial<ServeNodeOptions> = {}): Promise<HttpServeClient> {
      nodes.serveNode = await startServeNode({
        dataDir: nodes.serveDir.path,
        logUrls: [nodes.logNode!.url],
        logger: silent,
        ...options,
      });
      return new HttpServeClient(nodes.serveNode.url);
    },
  };
  afterAll(async () => {
    await nodes.serveNode?.stop();
    await nodes.logNode?.stop();
    nodes.serveDir.cleanup();
    nodes.logDir.cleanup();
  });
  return nodes;
}
