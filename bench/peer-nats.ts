/**
 * NATS as a peer: JetStream publish of 100-byte messages to a file-storage stream, each publish
 * waiting for its PubAck, 64 connections with one publish in flight each: the same shape as
 * tailbase's single-record append. NOT DURABLE: Debian's nats-server 2.9 acks before fsync (and
 * rejects `sync_interval`), so the workload's name says so, and so does the ratio drawn against it. Debian
 * packages no NATS client tool, so the load comes from a minimal node:net client of the NATS text
 * protocol written here, which saturates before a native one would on two cores.
 */
import { rmSync } from 'node:fs';
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { LatencyHistogram } from './latency-histogram.js';
import { freePort, spawnServer } from './processes.js';
import { makeBenchDir } from './references.js';
import type { BenchOptions, WorkloadResult } from './types.js';

const CONNECTIONS = 64;
const VALUE_BYTES = 100;
const STREAM = 'bench';
const REPLY_MS_MAX = 10_000;
/** A loop bound on top of the time bound, far above what two cores can publish in a run. */
const PUBLISHES_PER_CONNECTION_MAX = 10_000_000;
const CRLF = '\r\n';

export const NATS_PUBLISH = 'nats JetStream publish (not durable)';

/** One connection, one request in flight at a time: replies arrive on the connection's inbox. */
class NatsConnection {
  private buffer: Buffer = Buffer.alloc(0);
  private waiting: { resolve(payload: string): void; reject(error: Error): void } | null = null;
  private failure: Error | null = null;

  private constructor(
    private readonly socket: Socket,
    private readonly inbox: string,
  ) {
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (error) => this.fail(error));
    socket.on('close', () => this.fail(new Error('nats connection closed')));
  }

  static async open(port: number, index: number): Promise<NatsConnection> {
    const socket = connect(port, '127.0.0.1');
    socket.setNoDelay(true);
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    const connection = new NatsConnection(socket, `_INBOX.bench.${index}`);
    const connectOptions = JSON.stringify({ verbose: false, pedantic: false, headers: false });
    socket.write(`CONNECT ${connectOptions}${CRLF}SUB ${connection.inbox} 1${CRLF}`);
    return connection;
  }

  /** Publishes with this connection's inbox as the reply subject and resolves with the reply. */
  request(subject: string, payload: Buffer | string): Promise<string> {
    if (this.failure) return Promise.reject(this.failure);
    const body = typeof payload === 'string' ? Buffer.from(payload) : payload;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => this.fail(new Error('nats reply timed out')), REPLY_MS_MAX);
      this.waiting = {
        resolve: (reply) => {
          clearTimeout(timer);
          resolve(reply);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      };
      this.socket.write(
        Buffer.concat([
          Buffer.from(`PUB ${subject} ${this.inbox} ${body.length}${CRLF}`),
          body,
          Buffer.from(CRLF),
        ]),
      );
    });
  }

  close(): void {
    this.socket.destroy();
  }

  private fail(error: Error): void {
    this.failure ??= error;
    const waiting = this.waiting;
    this.waiting = null;
    waiting?.reject(error);
  }

  private onData(chunk: Buffer): void {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    for (;;) {
      const end = this.buffer.indexOf(CRLF);
      if (end < 0) return;
      const line = this.buffer.subarray(0, end).toString('latin1');
      if (line.startsWith('MSG ')) {
        const bytes = Number(line.slice(line.lastIndexOf(' ') + 1));
        const total = end + 2 + bytes + 2;
        if (this.buffer.length < total) return;
        const payload = this.buffer.subarray(end + 2, end + 2 + bytes).toString('utf8');
        this.buffer = this.buffer.subarray(total);
        const waiting = this.waiting;
        this.waiting = null;
        waiting?.resolve(payload);
        continue;
      }
      this.buffer = this.buffer.subarray(end + 2);
      if (line === 'PING') this.socket.write(`PONG${CRLF}`);
      else if (line.startsWith('-ERR')) this.fail(new Error(`nats: ${line}`));
    }
  }
}

function checkAck(reply: string): void {
  const ack = JSON.parse(reply) as { error?: { description?: string }; seq?: number };
  if (ack.error || typeof ack.seq !== 'number') throw new Error(`JetStream rejected: ${reply}`);
}

export async function runNatsBench(
  options: BenchOptions,
  binary: string,
): Promise<WorkloadResult[]> {
  const dir = makeBenchDir('nats');
  try {
    const port = await freePort();
    const monitorPort = await freePort();
    const server = await spawnServer({
      command: binary,
      args: ['-a', '127.0.0.1', '-p', String(port), '-m', String(monitorPort), '-js', '-sd', dir],
      port: monitorPort,
      readyPath: '/healthz?js-enabled-only=true',
    });
    const connections: NatsConnection[] = [];
    try {
      for (let i = 0; i < CONNECTIONS; i++) connections.push(await NatsConnection.open(port, i));
      const stream = { name: STREAM, subjects: [`${STREAM}.>`], storage: 'file', num_replicas: 1 };
      const created = JSON.parse(
        await connections[0].request(`$JS.API.STREAM.CREATE.${STREAM}`, JSON.stringify(stream)),
      ) as { error?: unknown };
      if (created.error) throw new Error(`stream create failed: ${JSON.stringify(created.error)}`);

      const value = Buffer.alloc(VALUE_BYTES, 0x78);
      const durationMs = (options.quick ? 1 : 5) * 1000;
      const histogram = new LatencyHistogram();
      server.resetPeakRss();
      const started = performance.now();
      const deadline = started + durationMs;
      let acked = 0;
      await Promise.all(
        connections.map(async (connection, index) => {
          const subject = `${STREAM}.${index}`;
          for (let i = 0; i < PUBLISHES_PER_CONNECTION_MAX && performance.now() < deadline; i++) {
            const t0 = performance.now();
            checkAck(await connection.request(subject, value));
            histogram.recordMs(performance.now() - t0);
            acked++;
          }
        }),
      );
      const seconds = (performance.now() - started) / 1000;
      return [
        {
          group: 'peers',
          name: NATS_PUBLISH,
          description: `1 x ${VALUE_BYTES} B message, ${CONNECTIONS} connections, file storage, NOT DURABLE (2.9 acks before fsync), client node:net`,
          throughput: { value: acked / seconds, unit: 'records/s' },
          latency: histogram.summary(),
          figures: {
            connections: CONNECTIONS,
            acked,
            durable: 'no: acks before fsync',
            client: 'node:net',
          },
          ratios: [],
          peakRssBytes: { 'nats-server': server.peakRssBytes() },
        },
      ];
    } finally {
      for (const connection of connections) connection.close();
      await server.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
