/**
 * A log-node opened in-process on a temp directory with a Kafka listener over its LogClient, and
 * a raw Kafka connection that speaks the codec (shared/kafka) for requests no client library
 * would send. Every wait here is bounded; stop() closes the listener, the node and the directory.
 */
import { execFile, spawnSync } from 'node:child_process';
import net from 'node:net';
import { openLogNode, type OpenLogNode } from '../../log-node/index.js';
import { startKafkaListener, type KafkaListener } from '../../log-node/kafka/index.js';
import type { KafkaListenerOptions } from '../../log-node/kafka/config.js';
import { defaultTopicConfigs } from '../../log-node/topic-configs.js';
import {
  decodeResponse,
  encodeRequest,
  KafkaFrameSplitter,
  type ApiKey,
  type RequestInput,
  type ResponseBody,
} from '../../shared/kafka/index.js';
import { createLogger } from '../../shared/logger.js';
import { tempDir } from './temp-dir.js';

export interface KafkaNode {
  node: OpenLogNode;
  listener: KafkaListener;
  /** host:port for a client's bootstrap servers. */
  broker: string;
  stop(): Promise<void>;
}

export async function startKafkaNode(
  options: Partial<Omit<KafkaListenerOptions, 'log' | 'logCreatingNothing'>> & {
    partitions?: number;
  } = {},
): Promise<KafkaNode> {
  const dir = tempDir('kafka');
  const node = await openLogNode({
    dataDir: dir.path,
    partitions: options.partitions ?? 4,
    logger: createLogger('log-node', 'silent'),
  });
  try {
    const listener = await startKafkaListener({
      port: 0,
      logger: createLogger('kafka', process.env.TAILBASE_LOG_LEVEL ?? 'silent'),
      topicConfigDefaults: (topic) => defaultTopicConfigs(node.node.config, topic),
      ...options,
      log: node.client,
      logCreatingNothing: node.viewClient,
    });
    return {
      node,
      listener,
      broker: `127.0.0.1:${listener.port}`,
      stop: async () => {
        await listener.close();
        await node.stop();
        dir.cleanup();
      },
    };
  } catch (error) {
    await node.stop();
    dir.cleanup();
    throw error;
  }
}

const WAIT_MS_DEFAULT = 5_000;

/** A Kafka connection by hand: requests encoded by the codec, answers read in order. */
export class RawKafkaConnection {
  readonly socket: net.Socket;
  private readonly splitter = new KafkaFrameSplitter(64 * 1024 * 1024);
  private readonly frames: Buffer[] = [];
  private readonly wanted: ((frame: Buffer) => void)[] = [];
  private correlationId = 0;
  readonly closed: Promise<void>;

  private constructor(socket: net.Socket) {
    this.socket = socket;
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      for (const frame of this.splitter.push(chunk)) {
        const waiter = this.wanted.shift();
        if (waiter) waiter(frame);
        else this.frames.push(frame);
      }
    });
  }

  static open(port: number): Promise<RawKafkaConnection> {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host: '127.0.0.1', port }, () =>
        resolve(new RawKafkaConnection(socket)),
      );
      socket.once('error', reject);
    });
  }

  send(bytes: Buffer): void {
    this.socket.write(bytes);
  }

  /** Sends a request without waiting; returns its correlation id. */
  sendRequest<K extends ApiKey>(apiKey: K, apiVersion: number, body: RequestInput<K>): number {
    const correlationId = ++this.correlationId;
    this.send(encodeRequest(apiKey, apiVersion, correlationId, 'raw-test', body));
    return correlationId;
  }

  async request<K extends ApiKey>(
    apiKey: K,
    apiVersion: number,
    body: RequestInput<K>,
    waitMs = WAIT_MS_DEFAULT,
  ): Promise<ResponseBody<K>> {
    const correlationId = this.sendRequest(apiKey, apiVersion, body);
    const answer = decodeResponse(apiKey, apiVersion, await this.nextFrame(waitMs));
    if (answer.correlationId !== correlationId) {
      throw new Error(`answer ${answer.correlationId} to request ${correlationId}`);
    }
    return answer.body;
  }

  /** The next answer frame (size prefix removed), or an error after waitMs. */
  nextFrame(waitMs = WAIT_MS_DEFAULT): Promise<Buffer> {
    const ready = this.frames.shift();
    if (ready) return Promise.resolve(ready);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.wanted.splice(this.wanted.indexOf(deliver), 1);
        reject(new Error(`no answer within ${waitMs} ms`));
      }, waitMs);
      const deliver = (frame: Buffer) => {
        clearTimeout(timer);
        resolve(frame);
      };
      this.wanted.push(deliver);
    });
  }

  /** True when the server closed the connection within waitMs. */
  async closedWithin(waitMs = WAIT_MS_DEFAULT): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), waitMs);
    });
    const closed = await Promise.race([this.closed.then(() => true as const), timeout]);
    clearTimeout(timer);
    return closed;
  }

  destroy(): void {
    this.socket.destroy();
  }
}

/**
 * Whether kcat (Debian's, librdkafka) is installed. `npm test` on a machine without it skips the
 * kcat tests and says so; CI installs it and sets TAILBASE_REQUIRE_KCAT=1, so there they fail
 * instead of skipping.
 */
export const KCAT_INSTALLED = ((): boolean => {
  const found = spawnSync('kcat', ['-V'], { timeout: 10_000 }).error === undefined;
  if (!found && process.env.TAILBASE_REQUIRE_KCAT === '1') {
    throw new Error('kcat is required here (TAILBASE_REQUIRE_KCAT=1): apt-get install kcat');
  }
  if (!found)
    console.warn('kcat is not installed: the kcat tests are skipped (apt-get install kcat)');
  return found;
})();

/** Runs kcat (bounded by timeoutMs, killed past it) and answers its stdout. */
export function kcat(
  args: readonly string[],
  options: { input?: string; timeoutMs?: number } = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      'kcat',
      args,
      { timeout: options.timeoutMs ?? 20_000, killSignal: 'SIGKILL', maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`kcat ${args.join(' ')} failed: ${error.message}\n${stderr}`));
        else resolve(stdout);
      },
    );
    child.stdin!.end(options.input ?? '');
  });
}

/** librdkafka gives up on a record after this, so a broken listener fails a test, not hangs it. */
export const KCAT_CLIENT_TIMEOUT = [
  '-X',
  'message.timeout.ms=10000',
  '-X',
  'socket.timeout.ms=10000',
] as const;

/** `kcat -C -e` of a whole topic as `partition offset key value` lines, NULL for a tombstone. */
export async function kcatConsumeAll(broker: string, topic: string): Promise<string[]> {
  const out = await kcat([
    '-C',
    '-b',
    broker,
    '-t',
    topic,
    '-e',
    '-Z',
    '-f',
    '%p %o %k %s\n',
    ...KCAT_CLIENT_TIMEOUT,
  ]);
  return out.split('\n').filter((line) => line !== '');
}

/**
 * kcatConsumeAll as each key's one record (partition, offset, value); a key read twice throws,
 * since each of these topics is written once per key.
 */
export async function kcatConsumeByKey(
  broker: string,
  topic: string,
): Promise<Map<string, { partition: number; offset: number; value: string }>> {
  const consumed = new Map<string, { partition: number; offset: number; value: string }>();
  for (const line of await kcatConsumeAll(broker, topic)) {
    const [partition, offset, key, ...value] = line.split(' ');
    if (consumed.has(key)) throw new Error(`${key} consumed twice from ${topic}`);
    consumed.set(key, {
      partition: Number(partition),
      offset: Number(offset),
      value: value.join(' '),
    });
  }
  return consumed;
}

/**
 * The Kafka listener's host:port in a spawned node's output: `tailbase start`'s ready line
 * (`tailbase is ready: URL  Kafka: host:port  (data in ...)`) or `tailbase log-node`'s
 * `Kafka listener on host:port`.
 */
export function kafkaBrokerOf(output: string): string {
  const broker =
    /tailbase is ready: \S+ {2}Kafka: (\S+)/.exec(output)?.[1] ??
    /Kafka listener on (\S+)/.exec(output)?.[1];
  if (!broker) throw new Error(`no Kafka listener address in the output:\n${output}`);
  return broker;
}
