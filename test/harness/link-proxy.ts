import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';
import type { Writable } from 'node:stream';
import { kafkaAdvertising } from './kafka-proxy.js';

/**
 * A TCP proxy on one link between two nodes, in one of three states:
 * - `open`: bytes flow both ways;
 * - `cut`: every connection is reset (RST, as a crashed peer or a dropped route looks), and every
 *   new one is reset as soon as it is accepted;
 * - `stalled`: connections stay open and new ones are accepted, but no byte moves either way: what
 *   either side sent waits (read from neither socket, so TCP's own flow control holds it), and a
 *   new connection reaches the target only once the link heals. A congested or partitioned
 *   network that comes back, not a crashed node: nothing is lost, it arrives late.
 *
 * It carries anything over TCP: HTTP between the nodes, the Kafka protocol. In front of a Kafka
 * listener (`kafka`), it names itself in the listener's Metadata and FindCoordinator answers, so a
 * client bootstrapped on it reaches the listener only through it.
 */
export type LinkState = 'open' | 'cut' | 'stalled';

export interface LinkProxy {
  /** `http://127.0.0.1:<port>`, the address to give the node on this link's near side. */
  url: string;
  port: number;
  readonly state: LinkState;
  cut(): void;
  stall(): void;
  heal(): void;
  close(): Promise<void>;
}

export interface LinkProxyOptions {
  /** The far side's URL, read on each new connection. */
  target: () => string;
  /** Listen here (a port another node must know before this proxy starts), or any free port. */
  port?: number;
  /** The far side is a Kafka listener. */
  kafka?: boolean;
}

interface Pair {
  client: Socket;
  upstream: Socket | null;
  /** What the client's bytes are piped into, and the upstream's: the sockets, or Kafka's rewriting. */
  toUpstream: Writable | null;
  toClient: Writable | null;
}

export async function startLinkProxy(options: LinkProxyOptions): Promise<LinkProxy> {
  let state: LinkState = 'open';
  const pairs = new Set<Pair>();
  /** Accepted while stalled: connected upstream once the link heals. */
  const waiting: Pair[] = [];
  /** One side closed while stalled: the other side learns it when the link heals. */
  const closing: Pair[] = [];

  const reset = (pair: Pair) => {
    pairs.delete(pair);
    pair.client.resetAndDestroy();
    pair.upstream?.resetAndDestroy();
  };

  const join = (pair: Pair) => {
    const { hostname, port } = new URL(options.target());
    const upstream = connect(Number(port), hostname);
    pair.upstream = upstream;
    upstream.setNoDelay(true);
    pair.client.setNoDelay(true);
    if (options.kafka) {
      const { requests, answers } = kafkaAdvertising(proxyPort);
      requests.pipe(upstream);
      answers.pipe(pair.client);
      for (const stream of [requests, answers]) {
        stream.on('error', () => reset(pair));
      }
      [pair.toUpstream, pair.toClient] = [requests, answers];
    } else {
      [pair.toUpstream, pair.toClient] = [upstream, pair.client];
    }
    // pipe() keeps backpressure both ways, so pausing a socket holds its bytes in the kernel.
    pair.client.pipe(pair.toUpstream);
    upstream.pipe(pair.toClient);
    const end = () => {
      if (state === 'stalled') {
        closing.push(pair);
        return;
      }
      pairs.delete(pair);
      pair.client.destroy();
      upstream.destroy();
    };
    upstream.on('error', () => {
      // The far side failed (a killed node): the near side sees a reset, once the link carries it.
      if (state === 'stalled') closing.push(pair);
      else pair.client.resetAndDestroy();
    });
    upstream.on('close', end);
    pair.client.on('close', end);
  };

  const server: Server = createServer((client) => {
    client.on('error', () => {});
    const pair: Pair = { client, upstream: null, toUpstream: null, toClient: null };
    if (state === 'cut') {
      client.resetAndDestroy();
      return;
    }
    pairs.add(pair);
    if (state === 'stalled') {
      client.pause();
      waiting.push(pair);
    } else join(pair);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const proxyPort = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${proxyPort}`,
    port: proxyPort,
    get state() {
      return state;
    },
    cut() {
      state = 'cut';
      waiting.length = 0;
      closing.length = 0;
      for (const pair of [...pairs]) reset(pair);
    },
    stall() {
      if (state === 'cut') return;
      state = 'stalled';
      for (const pair of pairs) {
        // Unpiping stops the flow at once; the sockets are paused so nothing more is read.
        pair.client.unpipe();
        pair.upstream?.unpipe();
        pair.client.pause();
        pair.upstream?.pause();
      }
    },
    heal() {
      const was = state;
      state = 'open';
      if (was !== 'stalled') return;
      for (const pair of closing.splice(0)) {
        pairs.delete(pair);
        pair.client.destroy();
        pair.upstream?.destroy();
      }
      for (const pair of pairs) {
        if (pair.upstream === null) continue;
        pair.client.pipe(pair.toUpstream!);
        pair.upstream.pipe(pair.toClient!);
      }
      for (const pair of waiting.splice(0)) {
        if (!pair.client.destroyed) join(pair);
        else pairs.delete(pair);
      }
    },
    async close() {
      state = 'cut';
      for (const pair of [...pairs]) reset(pair);
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
