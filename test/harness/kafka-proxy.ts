/**
 * A Kafka-aware TCP proxy in front of a Kafka listener, for retry tests. It forwards each
 * client's frames to the listener and the answers back, and:
 *
 * - rewrites Metadata and FindCoordinator answers so they name the proxy, not the listener
 *   (tailbase has no advertised-port flag: a listener names the host the client reached and its
 *   own port), so a client's every later connection comes back through it;
 * - injects a fault into a Produce request, chosen per request by `onProduce(n)` (n counts
 *   Produce requests through the proxy from 1):
 *   - `duplicate`: the request frame is sent to the listener twice, byte for byte (same
 *     correlation id, as a retry on the wire); the client gets the first answer, the second is
 *     kept in `duplicateAnswers` beside the first and dropped;
 *   - `drop-answer`: the request reaches the listener but its answer is dropped, so the client
 *     times out and retries;
 *   - `cut`: the request reaches the listener, and when its answer comes back the answer is
 *     dropped and the client's connection closed: a network failure after the write, before the
 *     acknowledgement;
 *   - `hold`: the request never reaches the listener and is never answered (`onHeld(n)` says
 *     when), so a test can kill the client at a point where it waits on that write;
 *   - `forward`.
 * - holds each Fetch answer `fetchAnswerDelayMs` before passing it on (a slow log, as one client
 *   sees it; the answers behind it on the connection wait too, so their order is kept);
 * - `stall(true)` keeps every connection open but reads nothing from either side: the listener
 *   looks alive and never answers (a hung process, not a crashed one). What is sent meanwhile
 *   waits in the sockets' buffers and flows once the stall ends, so no frame is lost or cut.
 *
 * Answers come back in request order on a connection (Kafka's rule, and the listener's), so
 * answers are matched to requests by order, and checked by correlation id.
 */
import net, { type AddressInfo } from 'node:net';
import { Transform } from 'node:stream';
import {
  ApiKey,
  decodeResponse,
  encodeResponse,
  KafkaFrameSplitter,
} from '../../shared/kafka/index.js';

export type ProduceFault = 'forward' | 'duplicate' | 'drop-answer' | 'cut' | 'hold';

/** One partition's answer to a Produce: `topic:partition error=E base=B`. */
export type ProduceAnswerSummary = string[];

export interface KafkaProxyStats {
  produceRequests: number;
  faults: Record<ProduceFault, number>;
  /** For each duplicated request: the answer the client got and the answer to the copy. */
  duplicateAnswers: { original: ProduceAnswerSummary; duplicate: ProduceAnswerSummary }[];
  connections: number;
}

export interface KafkaProxy {
  port: number;
  /** host:port for a client's bootstrap servers. */
  broker: string;
  stats: KafkaProxyStats;
  stall(on: boolean): void;
  close(): Promise<void>;
}

interface Pending {
  apiKey: number;
  apiVersion: number;
  correlationId: number;
  fault: ProduceFault;
  /** The Produce request's number through the proxy (from 1); 0 for other APIs. */
  produceNumber: number;
  /** Set on the copy of a duplicated request: the pending entry of the original. */
  copyOf?: Pending;
  answer?: ProduceAnswerSummary;
}

export async function startKafkaProxy(options: {
  /** The listener's address, read for each new connection. */
  target: () => { host: string; port: number };
  onProduce?: (n: number) => ProduceFault;
  /**
   * Called when the answer to Produce request n arrives and is dropped (`drop-answer`, `cut`):
   * the listener has written the request's batches, and the client does not know it.
   */
  onAnswerDropped?: (n: number) => void;
  /** Called when Produce request n is held (`hold`): it never reaches the listener. */
  onHeld?: (n: number) => void;
  fetchAnswerDelayMs?: number;
}): Promise<KafkaProxy> {
  const stats: KafkaProxyStats = {
    produceRequests: 0,
    faults: { forward: 0, duplicate: 0, 'drop-answer': 0, cut: 0, hold: 0 },
    duplicateAnswers: [],
    connections: 0,
  };
  const sockets = new Set<net.Socket>();
  let proxyPort = 0;
  let stalled = false;

  const server = net.createServer((client) => {
    stats.connections++;
    const { host, port } = options.target();
    const upstream = net.connect({ host, port });
    sockets.add(client);
    sockets.add(upstream);
    if (stalled) {
      client.pause();
      upstream.pause();
    }
    const pending: Pending[] = [];
    const fromClient = new KafkaFrameSplitter();
    const fromUpstream = new KafkaFrameSplitter();
    /** Answers reach the client in order, each after the delay of those before it. */
    let answered = Promise.resolve();
    const answer = (bytes: Buffer, delayMs: number) => {
      answered = answered.then(async () => {
        if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
        if (!client.destroyed) client.write(bytes);
      });
    };
    const closeBoth = () => {
      client.destroy();
      upstream.destroy();
    };
    for (const socket of [client, upstream]) {
      socket.on('error', closeBoth);
      socket.on('close', () => {
        sockets.delete(socket);
        closeBoth();
      });
    }

    client.on('data', (chunk: Buffer) => {
      let frames: Buffer[];
      try {
        frames = fromClient.push(chunk);
      } catch {
        closeBoth();
        return;
      }
      for (const frame of frames) {
        const request: Pending = {
          apiKey: frame.readInt16BE(0),
          apiVersion: frame.readInt16BE(2),
          correlationId: frame.readInt32BE(4),
          fault: 'forward',
          produceNumber: 0,
        };
        if (request.apiKey === ApiKey.Produce) {
          stats.produceRequests++;
          request.produceNumber = stats.produceRequests;
          request.fault = options.onProduce?.(stats.produceRequests) ?? 'forward';
          stats.faults[request.fault]++;
          if (request.fault === 'hold') {
            options.onHeld?.(request.produceNumber);
            continue;
          }
        }
        pending.push(request);
        upstream.write(framed(frame));
        if (request.fault === 'duplicate') {
          pending.push({ ...request, fault: 'forward', copyOf: request });
          upstream.write(framed(frame));
        }
      }
    });

    upstream.on('data', (chunk: Buffer) => {
      let frames: Buffer[];
      try {
        frames = fromUpstream.push(chunk);
      } catch {
        closeBoth();
        return;
      }
      for (const frame of frames) {
        const request = pending.shift();
        const correlationId = frame.readInt32BE(0);
        if (!request || request.correlationId !== correlationId) {
          // Not the answer expected next: the proxy cannot follow this connection any more.
          closeBoth();
          return;
        }
        if (request.apiKey === ApiKey.Produce) {
          const answer = summarizeProduce(request.apiVersion, frame);
          if (request.copyOf) {
            stats.duplicateAnswers.push({ original: request.copyOf.answer!, duplicate: answer });
            continue;
          }
          request.answer = answer;
          if (request.fault === 'drop-answer' || request.fault === 'cut') {
            options.onAnswerDropped?.(request.produceNumber);
          }
          if (request.fault === 'drop-answer') continue;
          if (request.fault === 'cut') {
            closeBoth();
            return;
          }
        }
        const delayMs = request.apiKey === ApiKey.Fetch ? (options.fetchAnswerDelayMs ?? 0) : 0;
        answer(rewritten(request, frame, proxyPort), delayMs);
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  proxyPort = (server.address() as AddressInfo).port;
  return {
    port: proxyPort,
    broker: `127.0.0.1:${proxyPort}`,
    stats,
    stall(on) {
      stalled = on;
      for (const socket of sockets) {
        if (on) socket.pause();
        else socket.resume();
      }
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function framed(frame: Buffer): Buffer {
  const size = Buffer.alloc(4);
  size.writeInt32BE(frame.length);
  return Buffer.concat([size, frame]);
}

/**
 * For a plain TCP proxy on port `proxyPort` (link-proxy.ts) in front of a Kafka listener: the
 * client's bytes pass `requests` unchanged (it notes each request's API), the listener's pass
 * `answers`, which names the proxy in Metadata and FindCoordinator answers, so the client's later
 * connections come back through the proxy too. Streams, so the proxy's backpressure holds.
 */
export function kafkaAdvertising(proxyPort: number): { requests: Transform; answers: Transform } {
  const asked: Pick<Pending, 'apiKey' | 'apiVersion' | 'correlationId'>[] = [];
  const fromClient = new KafkaFrameSplitter(ADVERTISED_FRAME_BYTES_MAX);
  const fromListener = new KafkaFrameSplitter(ADVERTISED_FRAME_BYTES_MAX);
  const requests = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      try {
        for (const frame of fromClient.push(chunk)) {
          asked.push({
            apiKey: frame.readInt16BE(0),
            apiVersion: frame.readInt16BE(2),
            correlationId: frame.readInt32BE(4),
          });
        }
        done(null, chunk);
      } catch (error) {
        done(error as Error);
      }
    },
  });
  const answers = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      try {
        const out: Buffer[] = [];
        for (const frame of fromListener.push(chunk)) {
          const request = asked.shift();
          if (!request || request.correlationId !== frame.readInt32BE(0)) {
            throw new Error('an answer the proxy cannot match to its request');
          }
          out.push(rewritten(request, frame, proxyPort));
        }
        done(null, Buffer.concat(out));
      } catch (error) {
        done(error as Error);
      }
    },
  });
  return { requests, answers };
}

/** A Fetch answer's frame may carry a partition's whole read: far above a listener's own cap. */
const ADVERTISED_FRAME_BYTES_MAX = 1024 * 1024 * 1024;

/** The answer frame with the proxy named as the broker (and coordinator), size prefix included. */
function rewritten(
  request: Pick<Pending, 'apiKey' | 'apiVersion' | 'correlationId'>,
  frame: Buffer,
  proxyPort: number,
): Buffer {
  if (request.apiKey === ApiKey.Metadata) {
    const { body } = decodeResponse(ApiKey.Metadata, request.apiVersion, frame);
    return encodeResponse(ApiKey.Metadata, request.apiVersion, request.correlationId, {
      ...body,
      brokers: body.brokers.map((broker) => ({ ...broker, host: '127.0.0.1', port: proxyPort })),
    });
  }
  if (request.apiKey === ApiKey.FindCoordinator) {
    const { body } = decodeResponse(ApiKey.FindCoordinator, request.apiVersion, frame);
    return encodeResponse(ApiKey.FindCoordinator, request.apiVersion, request.correlationId, {
      ...body,
      ...(body.errorCode === 0 ? { host: '127.0.0.1', port: proxyPort } : {}),
      coordinators: body.coordinators.map((coordinator) =>
        coordinator.errorCode === 0
          ? { ...coordinator, host: '127.0.0.1', port: proxyPort }
          : coordinator,
      ),
    });
  }
  return framed(frame);
}

function summarizeProduce(apiVersion: number, frame: Buffer): ProduceAnswerSummary {
  const { body } = decodeResponse(ApiKey.Produce, apiVersion, frame);
  return body.responses.flatMap(({ name, partitionResponses }) =>
    partitionResponses.map(
      ({ index, errorCode, baseOffset }) =>
        `${name}:${index} error=${errorCode} base=${String(baseOffset)}`,
    ),
  );
}
