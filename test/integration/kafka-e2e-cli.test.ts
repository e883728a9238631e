/**
 * The Kafka listener's command-line contract on a spawned `tailbase log-node`: the advertised
 * address is what Metadata and FindCoordinator name (so clients behind NAT or a proxy reconnect to
 * it), `--kafka-port off` starts no listener, and a port in use is an error naming the flag.
 */
import fs from 'node:fs';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiKey } from '../../shared/kafka/index.js';
import { spawnNode, tempDir, type SpawnedNode, type TempDir } from '../harness/index.js';
import { kafkaBrokerOf, RawKafkaConnection } from '../harness/kafka.js';

const nodes: SpawnedNode[] = [];
const dirs: TempDir[] = [];
afterEach(async () => {
  for (const node of nodes.splice(0)) await node.stop();
  for (const dir of dirs.splice(0)) dir.cleanup();
});

/** The TCP ports a process listens on, from /proc: its sockets' inodes in LISTEN state. */
function listeningPorts(pid: number): number[] {
  const inodes = new Set(
    fs
      .readdirSync(`/proc/${pid}/fd`)
      .map((fd) => /^socket:\[(\d+)\]$/.exec(safeReadlink(`/proc/${pid}/fd/${fd}`))?.[1])
      .filter((inode): inode is string => inode !== undefined),
  );
  const ports = new Set<number>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const row of fs.readFileSync(table, 'utf8').split('\n').slice(1)) {
      const fields = row.trim().split(/\s+/);
      // local_address is ADDR:PORT in hex; st 0A is LISTEN; the inode is the tenth field.
      if (fields.length > 9 && fields[3] === '0A' && inodes.has(fields[9])) {
        ports.add(parseInt(fields[1].split(':')[1], 16));
      }
    }
  }
  return [...ports];
}

function safeReadlink(file: string): string {
  try {
    return fs.readlinkSync(file);
  } catch {
    return '';
  }
}

async function logNode(args: string[]): Promise<SpawnedNode> {
  const dir = tempDir('kafka-cli');
  dirs.push(dir);
  const node = await spawnNode('log-node', ['--data', dir.path, '--port', '0', ...args]);
  nodes.push(node);
  return node;
}

describe('the Kafka listener flags', () => {
  it('--kafka-advertised-host and --kafka-advertised-port are what Metadata and FindCoordinator name', async () => {
    const node = await logNode([
      '--kafka-port',
      '0',
      '--kafka-advertised-host',
      'kafka.example.net',
      '--kafka-advertised-port',
      '19092',
    ]);
    const port = Number(kafkaBrokerOf(node.output()).split(':')[1]);
    const connection = await RawKafkaConnection.open(port);
    try {
      const metadata = await connection.request(ApiKey.Metadata, 9, { topics: null });
      expect(metadata.brokers).toEqual([
        expect.objectContaining({ host: 'kafka.example.net', port: 19092 }),
      ]);
      const coordinator = await connection.request(ApiKey.FindCoordinator, 4, {
        keyType: 0,
        coordinatorKeys: ['readers'],
      });
      expect(coordinator.coordinators[0]).toMatchObject({
        host: 'kafka.example.net',
        port: 19092,
      });
    } finally {
      connection.destroy();
    }
  });

  it('--kafka-port off starts no listener: the process listens on its HTTP port only', async () => {
    const on = await logNode(['--kafka-port', '0']);
    const off = await logNode(['--kafka-port', 'off']);
    const httpPort = (node: SpawnedNode) => Number(new URL(node.url).port);
    // The check sees a Kafka listener when there is one, so its silence below means something.
    expect(listeningPorts(on.pid).sort()).toEqual(
      [httpPort(on), Number(kafkaBrokerOf(on.output()).split(':')[1])].sort(),
    );
    expect(listeningPorts(off.pid)).toEqual([httpPort(off)]);
    expect(off.output()).not.toContain('Kafka listener on');
  });

  it('a Kafka port in use is an error that names --kafka-port', async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as net.AddressInfo).port;
    try {
      const dir = tempDir('kafka-cli');
      dirs.push(dir);
      const failed = spawnNode('log-node', [
        ...['--data', dir.path, '--port', '0', '--kafka-port', String(port)],
      ]);
      await expect(failed).rejects.toThrow(/--kafka-port/);
    } finally {
      taken.close();
    }
  });
});
