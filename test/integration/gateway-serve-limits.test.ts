// Proves the gateway notices a serve-node whose read limits are tighter than its own: with default
// settings on both sides there is no conflict; a node started with a smaller scanLimitMax and
// waitMsMax shows both in /v1/status, while the scans within the node's bound still work.
import { afterAll, describe, expect, it } from 'vitest';
import { startGateway, type GatewayHandle } from '../../gateway/index.js';
import { serveLimitConflicts, resolveGatewayConfig } from '../../gateway/config.js';
import { createLogger } from '../../shared/logger.js';
import { DEFAULT_LIMITS as SERVE_DEFAULTS } from '../../serve-node/config.js';
import { logAndServeNodes } from '../harness/index.js';

const nodes = logAndServeNodes('serve-limits');
let gateway: GatewayHandle | undefined;

afterAll(async () => {
  await gateway?.stop();
});

describe("the gateway's limits against a serve-node's", () => {
  it('agree by default', () => {
    const config = resolveGatewayConfig({ logUrls: ['kafka://127.0.0.1:1'], serveUrls: [] });
    expect(serveLimitConflicts(config, SERVE_DEFAULTS)).toEqual([]);
  });

  it('are reported per serve-node in /v1/status when the node is tighter', async () => {
    await nodes.startLog({ partitions: 2 });
    await nodes.startServe({ limits: { scanLimitMax: 50, waitMsMax: 10_000 } });
    gateway = await startGateway(
      { port: 0, logUrls: [nodes.logUrl()], serveUrls: [nodes.serveNode!.url] },
      { logger: createLogger('gateway', 'silent') },
    );
    const status = (await (await fetch(`${gateway.url}/v1/status`)).json()) as {
      serveNodes: { node: number; limitConflicts: string[] }[];
    };
    expect(status.serveNodes[0].limitConflicts).toEqual([
      "scanLimitMax 1000 exceeds the serve-node's scanLimitMax 50",
      "waitMsMax 30000 exceeds the serve-node's waitMsMax 10000",
    ]);
    const scan = await fetch(`${gateway.url}/v1/collections/c/docs?limit=50`);
    expect(scan.status).toBe(200);
    const tooMany = await fetch(`${gateway.url}/v1/collections/c/docs?limit=51`);
    expect(tooMany.status).toBe(400);
  });
});
