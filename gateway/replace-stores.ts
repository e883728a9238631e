/**
 * After a topic is dropped (a collection or a view), each serve-node replaces its stores by
 * replaying the log, which no longer holds the topic: the same path as a rebuild, so the replicas
 * stay a function of the log.
 */
import { TailbaseError, unavailable } from '../shared/errors.js';
import type { GatewayConfig } from './config.js';
import type { ServeNode } from './topology.js';

/** How often a drop looks whether a serve-node has swapped its stores. */
const SWAP_POLL_MS = 20;

/** Has the node replay the log into new stores; resolves once it has swapped them in. */
export async function replaceStores(config: GatewayConfig, node: ServeNode): Promise<void> {
  const failed = (why: string) =>
    unavailable(
      'serve_node_unavailable',
      `the collection's topic is dropped, but serve-node ${node.index} ${why}: rebuild it`,
      { node: node.index },
    );
  try {
    // Its own clock stamps the swap: compared with itself, never with the gateway's.
    const before = (await node.client.status()).lastRebuild?.atMs;
    await node.client.rebuild();
    const polls = Math.ceil(config.limits.waitMsMax / SWAP_POLL_MS);
    for (let i = 0; i < polls; i++) {
      if ((await node.client.status()).lastRebuild?.atMs !== before) return;
      await new Promise((resolve) => setTimeout(resolve, SWAP_POLL_MS));
    }
  } catch (error) {
    if (!(error instanceof TailbaseError)) throw error;
    throw failed(`did not replace its stores (${error.message})`);
  }
  throw failed(`did not replace its stores within ${config.limits.waitMsMax} ms`);
}
