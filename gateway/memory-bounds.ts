/**
 * The gateway's own memory, named as a serve-node names its (serve-node/memory-bounds.ts): the
 * writes queued per partition writer, the change feeds open, their epoch counts and each feed's
 * reads for them, each with its flag, its limit and its size now. /v1/status answers it beside
 * each serve-node's.
 */
import type { MemoryBound } from '../shared/serve-api.js';
import type { GatewayServices } from './services.js';

export function gatewayMemoryBounds(services: GatewayServices): MemoryBound[] {
  const { config, writers, feeds, feedEpochs, feedEpochReads } = services;
  const pending = writers.pending();
  return [
    {
      name: 'queued writes',
      flag: 'pending-bytes-max',
      scope: `each partition writer (${pending.writers}; current: their sum)`,
      limit: config.writer.pendingBytesMax,
      unit: 'bytes',
      current: pending.bytes,
      kind: 'anonymous',
    },
    {
      name: 'change feeds',
      flag: 'feeds-max',
      scope: 'the gateway',
      limit: config.limits.feedsMax,
      unit: 'feeds',
      current: feeds.size,
      kind: 'anonymous',
    },
    {
      name: "change feeds' epoch counts",
      flag: 'feed-epoch-partitions-max',
      scope: 'the gateway',
      limit: config.limits.feedEpochPartitionsMax,
      unit: 'entries',
      current: feedEpochs.size,
      kind: 'anonymous',
    },
    {
      name: "change feeds' epoch reads",
      flag: 'feed-epoch-reads-max',
      // Per feed: the gateway's worst case is feeds-max times this times feed-read-bytes-max.
      scope:
        `each change feed (${feeds.size}; current: their sum), each read of up to ` +
        `${config.feedReadBytesMax} bytes`,
      limit: config.limits.feedEpochReadsMax,
      unit: 'reads',
      current: feedEpochReads.inFlight,
      kind: 'anonymous',
    },
  ];
}
