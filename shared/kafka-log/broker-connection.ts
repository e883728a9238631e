/**
 * One TCP connection to one broker (TLS when configured): opened on first use, the API versions
 * agreed (ApiVersions),
 * SASL/PLAIN spoken when configured, then requests pipelined up to inFlightRequestsMax and
 * matched to their answers by correlation id. A broker answers a connection's requests in order,
 * so a long-polling Fetch holds its connection: the pool (broker-pool.ts) gives fetches their own.
 *
 * Failures are the log contract's errors: a connection refused is `log_unreachable` with the
 * ECONNREFUSED cause (the request never reached the broker; shared/internal-http.ts's
 * `connectionRefused` reads it), any other loss of the connection or an answer later than its
 * deadline is `log_unreachable` without it (the broker may have acted on the request). A
 * connection that failed is spent; the pool opens another. A broker whose TLS handshake fails
 * (its certificate not signed by a trusted CA or not naming its host, or no TLS at all) is
 * `log_tls_refused`: a setting to fix, not an outage to wait out.
 */
import net from 'node:net';
import tls from 'node:tls';
import { abortable } from '../abortable.js';
import { TailbaseError } from '../errors.js';
import {
  ApiKey,
  decodeResponse,
  encodeRequest,
  KafkaFrameSplitter,
  supportedVersions,
  type RequestInput,
  type ResponseBody,
} from '../kafka/index.js';
import type { BrokerAddress, KafkaLogConfig } from './config.js';
import { logErrorOf } from './errors.js';

export interface RequestOptions {
  /** The answer's deadline from when the request is sent; past it the connection is closed. */
  timeoutMs: number;
  /** Abandons the wait (the answer, if it comes, is dropped); the connection stays. */
  signal?: AbortSignal;
}

interface Pending {
  apiKey: number;
  version: number;
  resolve(frame: Buffer): void;
  reject(error: unknown): void;
  timer: NodeJS.Timeout;
}

const OUR_VERSIONS = new Map(
  supportedVersions().map((range) => [range.apiKey, [range.minVersion, range.maxVersion]]),
);

/** ApiVersions v0: every broker answers it, whatever versions it supports. */
const API_VERSIONS_VERSION = 0;

export class BrokerConnection {
  readonly address: BrokerAddress;
  private readonly config: KafkaLogConfig;
  private socket: net.Socket | null = null;
  private opening: Promise<void> | null = null;
  private readonly splitter: KafkaFrameSplitter;
  private readonly pending = new Map<number, Pending>();
  private readonly slotWaiters: (() => void)[] = [];
  private correlationId = 0;
  /** The version of each API both sides speak, once ApiVersions has answered. */
  private versions = new Map<number, number>();
  private failure: Error | null = null;

  constructor(address: BrokerAddress, config: KafkaLogConfig) {
    this.address = address;
    this.config = config;
    this.splitter = new KafkaFrameSplitter(config.responseBytesMax);
  }

  /** False once the connection failed or was closed: the pool replaces it. */
  get usable(): boolean {
    return this.failure === null;
  }

  /** The version this connection speaks of an API (the highest both sides support). */
  async version(apiKey: ApiKey): Promise<number> {
    await this.open();
    const version = this.versions.get(apiKey);
    if (version === undefined) {
      throw new TailbaseError(
        502,
        'log_unsupported',
        `the broker at ${this.where()} speaks no version of Kafka API ${apiKey} that tailbase does`,
      );
    }
    return version;
  }

  /** Sends a request at the agreed version and decodes its answer. */
  async request<K extends ApiKey>(
    apiKey: K,
    body: RequestInput<K>,
    options: RequestOptions,
  ): Promise<ResponseBody<K>> {
    const version = await this.version(apiKey);
    return this.send(apiKey, version, body, options);
  }

  private async send<K extends ApiKey>(
    apiKey: K,
    version: number,
    body: RequestInput<K>,
    options: RequestOptions,
  ): Promise<ResponseBody<K>> {
    options.signal?.throwIfAborted();
    while (this.pending.size >= this.config.inFlightRequestsMax) {
      await new Promise<void>((resolve) => this.slotWaiters.push(resolve));
    }
    if (this.failure) throw this.failure;
    const socket = this.socket;
    if (socket === null) throw this.unreachable('the connection is not open');
    const correlationId = (this.correlationId = (this.correlationId + 1) | 0);
    const frame = encodeRequest(apiKey, version, correlationId, this.config.clientId, body);
    const answer = new Promise<Buffer>((resolve, reject) => {
      const timer = setTimeout(
        () => this.fail(this.unreachable(`no answer within ${options.timeoutMs} ms (answerMsMax)`)),
        options.timeoutMs,
      );
      this.pending.set(correlationId, { apiKey, version, resolve, reject, timer });
    });
    socket.write(frame);
    const frameIn = await abortable(answer, options.signal);
    return decodeResponse(apiKey, version, frameIn).body;
  }

  /** Opens the socket, agrees on versions and authenticates, once; a failure is kept. */
  private open(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    this.opening ??= this.connect().then(() => this.handshake());
    return this.opening;
  }

  private connect(): Promise<void> {
    return new Promise((resolve, reject) => {
      const { host, port } = this.address;
      const { tls: tlsOptions } = this.config;
      const socket =
        tlsOptions === null
          ? net.connect({ host, port })
          : tls.connect({
              host,
              port,
              // SNI carries names only; an IP literal is checked against the certificate's IP SANs.
              servername: net.isIP(host) === 0 ? host : undefined,
              ca: tlsOptions.ca,
            });
      socket.setNoDelay(true);
      let tcpConnected = false;
      const timer = setTimeout(() => {
        socket.destroy();
        const error = this.unreachable(`no connection within ${this.config.connectTimeoutMs} ms`);
        this.failure = error;
        reject(error);
      }, this.config.connectTimeoutMs);
      socket.once('connect', () => {
        tcpConnected = true;
      });
      socket.once(tlsOptions === null ? 'connect' : 'secureConnect', () => {
        clearTimeout(timer);
        this.socket = socket;
        resolve();
      });
      socket.on('error', (cause: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        const error =
          this.socket === null && tlsOptions !== null && tcpConnected && !isErrnoCode(cause.code)
            ? this.tlsRefused(cause)
            : this.unreachable(`the connection failed (${cause.code ?? 'no code'})`, cause);
        if (this.socket === null) {
          this.failure = error;
          reject(error);
        } else this.fail(error);
      });
      socket.on('close', () => this.fail(this.unreachable('the broker closed the connection')));
      socket.on('data', (chunk: Buffer) => this.received(chunk));
    });
  }

  private async handshake(): Promise<void> {
    const timeoutMs = this.config.answerMsMax;
    const answer = await this.send(ApiKey.ApiVersions, API_VERSIONS_VERSION, {}, { timeoutMs });
    if (answer.errorCode !== 0) {
      throw this.fail(logErrorOf(answer.errorCode, `ApiVersions at ${this.where()}`));
    }
    for (const { apiKey, minVersion, maxVersion } of answer.apiKeys) {
      const ours = OUR_VERSIONS.get(apiKey);
      if (ours === undefined) continue;
      const version = Math.min(ours[1], maxVersion);
      if (version >= ours[0] && version >= minVersion) this.versions.set(apiKey, version);
    }
    if (this.config.sasl) await this.authenticate(timeoutMs);
  }

  /** SASL/PLAIN (RFC 4616): SaslHandshake, then the credentials in SaslAuthenticate. */
  private async authenticate(timeoutMs: number): Promise<void> {
    const { username, password } = this.config.sasl!;
    const handshakeVersion = this.versions.get(ApiKey.SaslHandshake);
    const authenticateVersion = this.versions.get(ApiKey.SaslAuthenticate);
    if (handshakeVersion !== 1 || authenticateVersion === undefined) {
      throw this.fail(
        new TailbaseError(502, 'log_unsupported', `the broker at ${this.where()} has no SASL`),
      );
    }
    const handshake = await this.send(
      ApiKey.SaslHandshake,
      handshakeVersion,
      { mechanism: 'PLAIN' },
      { timeoutMs },
    );
    if (handshake.errorCode !== 0) {
      throw this.fail(logErrorOf(handshake.errorCode, `SASL mechanisms: ${handshake.mechanisms}`));
    }
    const authBytes = Buffer.from(`\0${username}\0${password}`, 'utf8');
    const answer = await this.send(
      ApiKey.SaslAuthenticate,
      authenticateVersion,
      { authBytes },
      { timeoutMs },
    );
    if (answer.errorCode !== 0) {
      throw this.fail(logErrorOf(answer.errorCode, answer.errorMessage));
    }
  }

  private received(chunk: Buffer): void {
    let frames: Buffer[];
    try {
      frames = this.splitter.push(chunk);
    } catch (error) {
      this.fail(this.unreachable(`a malformed answer: ${(error as Error).message}`));
      return;
    }
    for (const frame of frames) {
      const correlationId = frame.length >= 4 ? frame.readInt32BE(0) : NaN;
      const pending = this.pending.get(correlationId);
      if (pending === undefined) {
        this.fail(this.unreachable(`an answer to no request (correlation id ${correlationId})`));
        return;
      }
      this.settle(correlationId, pending);
      pending.resolve(frame);
    }
  }

  private settle(correlationId: number, pending: Pending): void {
    clearTimeout(pending.timer);
    this.pending.delete(correlationId);
    this.slotWaiters.shift()?.();
  }

  /** Spends the connection: every request in flight or waiting fails with `error`. */
  private fail(error: Error): Error {
    if (this.failure) return this.failure;
    this.failure = error;
    this.socket?.destroy();
    for (const [correlationId, pending] of this.pending) {
      this.settle(correlationId, pending);
      pending.reject(error);
    }
    for (const waiter of this.slotWaiters.splice(0)) waiter();
    return error;
  }

  close(): void {
    this.fail(this.unreachable('the connection was closed by this client'));
  }

  /**
   * The broker's address goes only into the cause, which the nodes log: the error itself reaches
   * API callers, who are not told the cluster's internal addresses. A socket's own error stays the
   * cause (its errno tells a refused connection, which never reached the broker: connectionRefused).
   */
  private unreachable(message: string, cause?: Error): TailbaseError {
    return new TailbaseError(
      503,
      'log_unreachable',
      `a Kafka broker of the log is unreachable: ${message}; retry later`,
      {},
      { cause: cause ?? new Error(`the Kafka broker at ${this.where()}: ${message}`) },
    );
  }

  private tlsRefused(cause: NodeJS.ErrnoException): TailbaseError {
    return new TailbaseError(
      502,
      'log_tls_refused',
      `the TLS handshake with the Kafka broker at ${this.where()} failed: ${cause.message}` +
        ` (${cause.code ?? 'no code'}); --kafka-tls-ca names the CA that signed its certificate`,
      { broker: this.where(), tlsError: cause.code ?? null },
      { cause },
    );
  }

  private where(): string {
    return `${this.address.host}:${this.address.port}`;
  }
}

/** ECONNRESET and its kind, a network failure; TLS's own codes (ERR_SSL_*, CERT_*, ...) are not. */
function isErrnoCode(code: string | undefined): boolean {
  return code !== undefined && /^E[A-Z]+$/.test(code);
}
