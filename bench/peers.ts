/**
 * Peer databases run side by side with tailbase when installed (Debian packages): which are here,
 * and the one apt-get line that brings the missing ones.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

export type PeerName = 'etcd' | 'redis' | 'nats' | 'postgres';

export interface Peer {
  name: PeerName;
  aptPackage: string;
  /** The server binary, or null when the package is missing. */
  binary: string | null;
  note: string;
}

function onPath(command: string): string | null {
  const found = spawnSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' });
  const path = found.stdout.trim();
  return found.status === 0 && path.length > 0 ? path : null;
}

function postgresBinary(): string | null {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root).sort((a, b) => Number(b) - Number(a));
  for (const version of versions) {
    const binary = join(root, version, 'bin', 'postgres');
    if (existsSync(binary)) return binary;
  }
  return null;
}

export function detectPeers(): Peer[] {
  return [
    {
      name: 'etcd',
      aptPackage: 'etcd-server',
      binary: onPath('etcd'),
      note: 'put/get, serializable and linearizable',
    },
    {
      name: 'redis',
      aptPackage: 'redis-server',
      binary: onPath('redis-server'),
      note: 'XADD and GET with appendfsync always',
    },
    {
      name: 'nats',
      aptPackage: 'nats-server',
      binary: onPath('nats-server'),
      note: 'JetStream publish, file storage; 2.9 acks before fsync: not durable',
    },
    {
      name: 'postgres',
      aptPackage: 'postgresql',
      binary: postgresBinary(),
      note: 'insert/select by primary key, tsvector + GIN search',
    },
  ];
}

export function aptLine(peers: Peer[]): string | null {
  const missing = peers.filter((p) => p.binary === null).map((p) => p.aptPackage);
  return missing.length === 0 ? null : `apt-get install -y ${missing.join(' ')}`;
}

export function describePeers(peers: Peer[]): string {
  const lines = peers.map(
    (p) => `  ${p.name.padEnd(9)} ${p.binary ? `installed  ${p.binary}` : 'missing'}  (${p.note})`,
  );
  const apt = aptLine(peers);
  lines.push(apt ? `To install the missing peers: ${apt}` : 'Every peer is installed.');
  return lines.join('\n');
}
