/**
 * Each collection's bytes on disk, for GET /v1/collections: the log's (each partition's segment
 * files, from the log contract's diskBytes) and the serving stores' (each serve-node's LMDB and
 * SQLite bytes of it, summed over the nodes). A part the cluster cannot say is null, never 0:
 * a log without DescribeLogDirs, a partition it left out, a serve-node that did not answer.
 */
import type { LogClient } from '../shared/log-api.js';
import type { Logger } from '../shared/logger.js';
import type { CollectionStoreBytes, ServeClient } from '../shared/serve-api.js';
import type { CollectionBytes } from './api/index.js';

export interface CollectionTopic {
  name: string;
  partitions: number;
}

/** The bytes of each of `topics`, in their order. */
export async function collectionBytes(
  log: LogClient,
  serveNodes: readonly ServeClient[],
  topics: readonly CollectionTopic[],
  logger: Logger,
): Promise<CollectionBytes[]> {
  const unknown = (part: string) => (error: unknown) => {
    logger.warn({ err: error, part }, 'bytes on disk unknown: a part did not answer');
    return null;
  };
  const [logBytes, stores] = await Promise.all([
    log.diskBytes().catch(unknown('log')),
    Promise.all(
      serveNodes.map((node, index) => node.storeBytes().catch(unknown(`serve-node ${index}`))),
    ),
  ]);
  const serving = sumServing(stores);
  return topics.map((topic) => {
    const parts = (logBytes ?? []).filter((entry) => entry.topic === topic.name);
    const known = parts.length === topic.partitions && parts.every((p) => p.bytes !== null);
    const ofLog = known ? parts.reduce((sum, p) => sum + (p.bytes ?? 0), 0) : null;
    const lmdb = serving === null ? null : (serving.get(topic.name)?.lmdb ?? 0);
    const sqlite = serving === null ? null : (serving.get(topic.name)?.sqlite ?? 0);
    const total = ofLog === null || lmdb === null || sqlite === null ? null : ofLog + lmdb + sqlite;
    return { log: ofLog, lmdb, sqlite, total };
  });
}

/** Every node's bytes of each collection added up; null when any node did not answer. */
function sumServing(
  stores: readonly (CollectionStoreBytes[] | null)[],
): Map<string, { lmdb: number; sqlite: number }> | null {
  if (stores.some((store) => store === null)) return null;
  const sums = new Map<string, { lmdb: number; sqlite: number }>();
  for (const entry of stores.flatMap((store) => store ?? [])) {
    const sum = sums.get(entry.collection) ?? { lmdb: 0, sqlite: 0 };
    sum.lmdb += entry.lmdb;
    sum.sqlite += entry.sqlite;
    sums.set(entry.collection, sum);
  }
  return sums;
}
