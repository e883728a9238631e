/**
 * The identity of a log-node's data directory: the cluster id (which tokens are bound to), the
 * partition count (fixed when the cluster is created) and the node id. Written once, atomically,
 * with the format version of the data beside it: a directory of another format is refused.
 */
import path from 'node:path';
import { ulid } from 'ulid';
import { mkdirDurable, writeFileAtomic } from '../shared/durable-files.js';
import { type FileIO, isErrno, nodeFileIO } from '../shared/file-io.js';

/** Kafka RecordBatch v2, one directory per topic-partition (FORMAT.md). */
export const DATA_FORMAT_VERSION = 2;

export interface ClusterMeta {
  formatVersion: typeof DATA_FORMAT_VERSION;
  clusterId: string;
  partitions: number;
  hostedPartitions: number[];
  nodeId: string;
  createdAt: string;
}

const META_FILE = 'cluster.json';
/** Where tailbase's pre-Kafka format kept its partitions. */
const PRE_KAFKA_PARTITIONS_DIR = 'partitions';

/** A data directory written by a version whose format this one does not read. */
export class DataFormatError extends Error {
  override name = 'DataFormatError';
}

/**
 * Refuses a directory in the pre-Kafka layout: its batches are not RecordBatch v2 and its
 * partitions hold every collection together, so nothing here could read them.
 */
function refuseOldFormat(io: FileIO, dataDir: string, existing: ClusterMeta | null): void {
  const oldLayout = io.exists(path.join(dataDir, PRE_KAFKA_PARTITIONS_DIR));
  if (!oldLayout && (existing === null || existing.formatVersion === DATA_FORMAT_VERSION)) return;
  throw new DataFormatError(
    `the data directory ${dataDir} holds tailbase's pre-Kafka log format; this version stores ` +
      `Kafka RecordBatch v2 per topic; nothing migrates it: move the directory aside or delete ` +
      `it and write the data again`,
  );
}

export function readClusterMeta(dataDir: string, io: FileIO = nodeFileIO): ClusterMeta | null {
  try {
    return JSON.parse(io.readFile(path.join(dataDir, META_FILE)).toString('utf8')) as ClusterMeta;
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return null;
    throw new Error(`${path.join(dataDir, META_FILE)} is unreadable: ${(error as Error).message}`);
  }
}

export interface ClusterMetaRequest {
  partitions?: number;
  partitionsDefault: number;
  nodeId?: string;
  clusterId?: string;
  hostedPartitions?: number[];
}

/**
 * Loads the data directory's identity or creates it; refuses another format, a different
 * partition count, cluster or set of hosted partitions.
 */
export function loadOrCreateClusterMeta(
  dataDir: string,
  request: ClusterMetaRequest,
  io: FileIO = nodeFileIO,
): ClusterMeta {
  const { partitions, nodeId, clusterId, hostedPartitions } = request;
  mkdirDurable(dataDir, io);
  const existing = readClusterMeta(dataDir, io);
  refuseOldFormat(io, dataDir, existing);
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
    formatVersion: DATA_FORMAT_VERSION,
    clusterId: clusterId ?? ulid(),
    partitions: count,
    hostedPartitions: [...new Set(hosted)].sort((a, b) => a - b),
    nodeId: nodeId ?? `log-${ulid().slice(-8).toLowerCase()}`,
    createdAt: new Date().toISOString(),
  };
  writeFileAtomic(path.join(dataDir, META_FILE), Buffer.from(JSON.stringify(meta, null, 2)), io);
  return meta;
}
