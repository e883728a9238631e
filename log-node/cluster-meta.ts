/**
 * The identity of a log-node's data directory: the cluster id (which tokens are bound to), the
 * partition count (fixed when the cluster is created) and the node id. Written once, atomically.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ulid } from 'ulid';
import { writeFileAtomic } from '../shared/durable-files.js';

export interface ClusterMeta {
  formatVersion: 1;
  clusterId: string;
  partitions: number;
  hostedPartitions: number[];
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
export interface ClusterMetaRequest {
  partitions?: number;
  partitionsDefault: number;
  nodeId?: string;
  clusterId?: string;
  hostedPartitions?: number[];
}

export function loadOrCreateClusterMeta(dataDir: string, request: ClusterMetaRequest): ClusterMeta {
  const { partitions, nodeId, clusterId, hostedPartitions } = request;
  fs.mkdirSync(dataDir, { recursive: true });
  const existing = readClusterMeta(dataDir);
  if (existing) {
    if (partitions !== undefined && partitions !== existing.partitions) {
      throw new Error(
        `the data directory ${dataDir} holds ${existing.partitions} partitions; ` +
          `the partition count is fixed when a cluster is created (asked for ${partitions})`,
      );
    }
    if (clusterId !== undefined && clusterId !== existing.clusterId) {
      throw new Error(
        `the data directory ${dataDir} belongs to cluster ${existing.clusterId}, not ${clusterId}`,
      );
    }
    if (
      hostedPartitions !== undefined &&
      hostedPartitions.join() !== existing.hostedPartitions.join()
    ) {
      throw new Error(
        `the data directory ${dataDir} hosts partitions ${existing.hostedPartitions.join(',')}; ` +
          `moving partitions between log-nodes is not supported (asked for ${hostedPartitions.join(',')})`,
      );
    }
    return existing;
  }
  const count = partitions ?? request.partitionsDefault;
  const hosted = hostedPartitions ?? Array.from({ length: count }, (_, p) => p);
  if (hosted.some((p) => !Number.isInteger(p) || p < 0 || p >= count)) {
    throw new Error(`hosted partitions must lie in 0..${count - 1}`);
  }
  const meta: ClusterMeta = {
    formatVersion: 1,
    clusterId: clusterId ?? ulid(),
    partitions: count,
    hostedPartitions: [...new Set(hosted)].sort((a, b) => a - b),
    nodeId: nodeId ?? `log-${ulid().slice(-8).toLowerCase()}`,
    createdAt: new Date().toISOString(),
  };
  writeFileAtomic(path.join(dataDir, META_FILE), Buffer.from(JSON.stringify(meta, null, 2)));
  return meta;
}
