/**
 * Everything the routes share, built once per gateway: the log client, the partition writers,
 * the serve-node topology, the token codec, metrics and the logger.
 */
import type { LogRecord } from '../shared/batch-codec.js';
import { CODECS } from '../shared/batch-compression.js';
import type { ClusterInfo, LogClient } from '../shared/log-api.js';
import type { Logger } from '../shared/logger.js';
import { partitionFor } from '../shared/partitioner.js';
import type { ServeClient } from '../shared/serve-api.js';
import type { ViewProcessing } from '../shared/view-api.js';
import {
  collectionOffsets,
  mergeTokenOffsets,
  TokenCodec,
  type TokenOffsets,
} from '../shared/token.js';
import { serveLimitConflicts, type GatewayConfig } from './config.js';
import { createMetrics, type GatewayMetrics } from './metrics.js';
import { FeedEpochs } from './feed-epochs.js';
import { CollectionIncarnations } from './incarnations.js';
import { ViewCatalog } from '../shared/view-catalog.js';
import { ServedTokens } from './served-tokens.js';
import { ServeTopology } from './topology.js';
import { WriterPool } from './writer-pool.js';

export interface GatewayServices {
  config: GatewayConfig;
  cluster: ClusterInfo;
  log: LogClient;
  tokens: TokenCodec;
  /** The token texts of reads that sent none, kept until their offsets move (served-tokens.ts). */
  servedTokens: ServedTokens;
  writers: WriterPool;
  topology: ServeTopology;
  metrics: GatewayMetrics;
  logger: Logger;
  incarnations: CollectionIncarnations;
  /** The declared views, read from the log (view-catalog.ts). */
  views: ViewCatalog;
  /** The view processors when they run beside this gateway; null: elsewhere or nowhere. */
  viewProcessing: ViewProcessing | null;
  /** Open change feeds, aborted when the gateway stops. */
  feeds: Set<AbortController>;
  /** The change feeds' counts of views' partitions' epochs (feed-epochs.ts). */
  feedEpochs: FeedEpochs;
  /** Their reads below the feeds' starts in flight now, all feeds together (memory-bounds.ts). */
  feedEpochReads: { inFlight: number };
}

export function createGatewayServices(
  config: GatewayConfig,
  cluster: ClusterInfo,
  log: LogClient,
  serveClients: ServeClient[],
  logger: Logger,
  viewProcessing: ViewProcessing | null = null,
): GatewayServices {
  const topology = new ServeTopology(serveClients, {
    partitions: cluster.partitions,
    refreshMs: config.topologyRefreshMs,
    nodeDownMs: config.nodeDownMs,
    logger,
    limitConflicts: (limits) => serveLimitConflicts(config, limits),
  });
  const metrics = createMetrics(topology);
  const observe = (
    topic: string,
    partition: number,
    records: number,
    bytes: number,
    durationMs: number,
  ) => {
    const labels = { topic, partition: String(partition) };
    metrics.batchRecords.observe(labels, records);
    metrics.batchBytes.observe(labels, bytes);
    metrics.appendSeconds.observe(labels, durationMs / 1000);
  };
  const tokens = new TokenCodec(cluster.clusterId, cluster.partitions);
  return {
    config,
    cluster,
    log,
    tokens,
    servedTokens: new ServedTokens(tokens),
    writers: new WriterPool(log, config.writer, logger, observe, CODECS[config.logCompression]),
    topology,
    metrics,
    logger,
    incarnations: new CollectionIncarnations(log, config.topologyRefreshMs),
    views: new ViewCatalog(log, config.feedReadBytesMax),
    viewProcessing,
    feeds: new Set(),
    feedEpochs: new FeedEpochs(config.limits.feedEpochPartitionsMax),
    feedEpochReads: { inFlight: 0 },
  };
}

export async function closeGatewayServices(services: GatewayServices): Promise<void> {
  services.topology.stop();
  for (const feed of services.feeds) feed.abort();
  await services.writers.close();
}

export interface WrittenRecord {
  partition: number;
  offset: number;
}

/**
 * Routes records of one topic (a collection, or the settings topic) to their partitions' writers
 * and waits for every one; the answer keeps the records' order and carries the token merged over
 * the request's and every written offset, under the topic's id.
 */
export async function writeRecords(
  services: GatewayServices,
  topic: string,
  records: LogRecord[],
  requestToken: TokenOffsets,
  partitionOf: (record: LogRecord) => number = (r) =>
    partitionFor(r.key, services.cluster.partitions),
): Promise<{ written: WrittenRecord[]; token: Map<number, Map<number, number>> }> {
  const byPartition = new Map<number, number[]>();
  const partitions = records.map(partitionOf);
  partitions.forEach((p, i) => {
    const list = byPartition.get(p);
    if (list) list.push(i);
    else byPartition.set(p, [i]);
  });
  const written: WrittenRecord[] = new Array(records.length);
  const groups = [...byPartition].map(([partition, indexes]) => ({
    partition,
    indexes,
    records: indexes.map((i) => records[i]),
  }));
  const writers = groups.map(({ partition }) => services.writers.writer(topic, partition));
  // Every partition is asked first, so a request turned away queues nothing anywhere.
  groups.forEach(({ records: group }, i) => writers[i].admit(group));
  await Promise.all(
    groups.map(async ({ partition, indexes, records: group }, i) => {
      const offsets = await writers[i].enqueue(group);
      indexes.forEach((recordIndex, i) => {
        written[recordIndex] = { partition, offset: offsets[i] };
      });
    }),
  );
  const touched = new Map<number, number>();
  for (const { partition, offset } of written) {
    touched.set(partition, Math.max(offset, touched.get(partition) ?? -1));
  }
  // The topic exists now (a first write created it): its incarnation names it in the token.
  const incarnation = (await services.incarnations.of(topic)) ?? 0;
  return {
    written,
    token: mergeTokenOffsets(requestToken, collectionOffsets(topic, touched, incarnation)),
  };
}
