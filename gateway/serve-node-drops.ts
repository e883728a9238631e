/**
 * After a topic is dropped (a collection, or a view's versions), each serve-node drops it from its
 * stores in place (serve-node/collection-drops.ts): its documents, tables and checkpoints go while
 * every other collection goes on being applied and read, and the node then holds what a replica
 * rebuilt from the log without the topic holds. A node that misses the call (down, cut off) finds
 * the topic gone in the log and drops it then, at its next look or its next start.
 */
import { abortable } from '../shared/abortable.js';
import { TailbaseError, unavailable } from '../shared/errors.js';
import type { GatewayConfig } from './config.js';
import type { ServeNode } from './topology.js';

/**
 * Has every node drop every topic; resolves once each has marked them dropping and dropped their
 * tables (no read answers from them; the documents go after, in the background, while a
 * collection created again under the name is already served), within `waitMsMax` a node.
 */
export async function dropFromServeNodes(
  config: GatewayConfig,
  nodes: readonly ServeNode[],
  topics: readonly string[],
): Promise<void> {
  await Promise.all(nodes.map((node) => dropFromNode(config, node, topics)));
}

async function dropFromNode(
  config: GatewayConfig,
  node: ServeNode,
  topics: readonly string[],
): Promise<void> {
  const waitMsMax = config.limits.waitMsMax;
  const failed = (why: string) =>
    unavailable(
      'serve_node_unavailable',
      `the topic is dropped, but serve-node ${node.index} ${why}: it drops it when it next ` +
        'looks at the log, or at its next start',
      { node: node.index },
    );
  const signal = AbortSignal.timeout(waitMsMax);
  try {
    // Asked at once: the node queues them, and each answers without waiting on the others' calls.
    await abortable(
      Promise.all(topics.map((topic) => node.client.dropCollection(topic, signal))),
      signal,
    );
  } catch (error) {
    if (signal.aborted) throw failed(`did not drop it within ${waitMsMax} ms`);
    if (!(error instanceof TailbaseError)) throw error;
    throw failed(`did not drop it (${error.message})`);
  }
}
