/**
 * The identity of a log-node's data directory: the cluster id (which tokens are bound to), the
 * partition count (fixed when the cluster is created) and the node id. Written once, atomically.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ulid } from 'ulid';
import { writeFileAtomic } from './segment-files.js';

export interface ClusterMeta {
  formatVersion: 1;
  clusterId: string;
  partitions: number;
  nodeId: string;
  createdAt: string;
}

const META_FILE = 'cluster.json';

export function readClusterMeta(dataDir: string): ClusterMeta | null {
  try {
    return JSON.parse(fs.readFileSync(path.join(dataDir, META_FILE), 'utf8')) as ClusterMeta;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new Error(`${path.join(dataDir, META_FILE)} is unreadable: ${(error as Error).message}`);
  }
}

/** Loads the data directory's identity or creates it; refuses a different partition count. */
export function loadOrCreateClusterMeta(
  dataDir: string,
  partitions: number | undefined,
  partitionsDefault: number,
  nodeId: string | undefined,
): ClusterMeta {
  fs.mkdirSync(dataDir, { recursive: true });
  const existing = readClusterMeta(dataDir);
  if (existing) {
    if (partitions !== undefined && partitions !== existing.partitions) {
      throw new Error(
        `the data directory ${dataDir} holds ${existing.partitions} partitions; ` +
          `the partition count is fixed when a cluster is created (asked for ${partitions})`,
      );
    }
    return existing;
  }
  const meta: ClusterMeta = {
    formatVersion: 1,
    clusterId: ulid(),
    partitions: partitions ?? partitionsDefault,
    nodeId: nodeId ?? `log-${ulid().slice(-8).toLowerCase()}`,
    createdAt: new Date().toISOString(),
  };
  writeFileAtomic(path.join(dataDir, META_FILE), Buffer.from(JSON.stringify(meta, null, 2)));
  return meta;
}
