/**
 * One client connection: frames split from the socket, decoded, handled, and answered strictly
 * in the order they came (Kafka clients match answers to requests by position as well as by
 * correlation id). Up to inFlightRequestsMax requests are in progress at once; past that the
 * socket is not read until the oldest is answered and its answer has left, so neither requests
 * nor answers pile up in memory. A frame that does not decode, an unknown API, or an API not
 * allowed yet (before SASL) closes this connection and changes nothing.
 */
import { once } from 'node:events';
import type { Socket } from 'node:net';
import type { Logger } from '../../shared/logger.js';
import {
  ApiKey,
  decodeRequest,
  encodeResponseChunks,
  ErrorCode,
  KafkaFrameSplitter,
  type KafkaRequest,
  type RequestHeader,
  type UnsupportedKafkaRequest,
} from '../../shared/kafka/index.js';
import type { KafkaListenerConfig } from './config.js';
import {
  CloseConnection,
  NO_RESPONSE,
  type KafkaBroker,
  type KafkaHandlers,
  type KafkaRequestContext,
} from './handler.js';
import {
  authenticatePlain,
  authenticateViewWriter,
  PLAIN_MECHANISM,
  type KafkaPrincipal,
} from './sasl.js';

/** What a request comes to: bytes to write (maybe none), then maybe the connection's end. */
interface Outcome {
  chunks: Buffer[];
  close: string | null;
  /** The handler's callbacks for once the chunks are written (KafkaRequestContext.onWritten). */
  written?: (() => void)[];
}

const PRE_AUTHENTICATION_APIS: ReadonlySet<number> = new Set([
  ApiKey.ApiVersions,
  ApiKey.SaslHandshake,
  ApiKey.SaslAuthenticate,
]);

/** The empty frame that answers a bare SASL/PLAIN message (after a v0 handshake). */
const EMPTY_FRAME = Buffer.alloc(4);

export interface ConnectionOptions {
  id: number;
  socket: Socket;
  config: KafkaListenerConfig;
  handlers: KafkaHandlers;
  broker: KafkaBroker;
  logger: Logger;
}

export class KafkaConnection {
  readonly id: number;
  private readonly socket: Socket;
  private readonly config: KafkaListenerConfig;
  private readonly handlers: KafkaHandlers;
  private readonly broker: KafkaBroker;
  private readonly logger: Logger;
  private readonly splitter: KafkaFrameSplitter;
  /** Frames split from the socket and not decoded yet: at most one chunk's worth. */
  private readonly waiting: Buffer[] = [];
  private inFlight = 0;
  /** The answers, chained in request order. */
  private answered: Promise<void> = Promise.resolve();
  private readonly closing = new AbortController();
  private principal: KafkaPrincipal | null = null;
  private saslHandshaken = false;
  /** After a v0 handshake the next frame is the bare PLAIN message. */
  private bareSaslNext = false;
  private authenticateTimer: NodeJS.Timeout | null = null;
  /** Resolves once the socket is closed. */
  readonly closed: Promise<void>;

  constructor(options: ConnectionOptions) {
    this.id = options.id;
    this.socket = options.socket;
    this.config = options.config;
    this.handlers = options.handlers;
    this.broker = options.broker;
    this.logger = options.logger.child({ connection: options.id });
    this.splitter = new KafkaFrameSplitter(
      options.config.saslRequired
        ? Math.min(options.config.frameBytesMaxUnauthenticated, options.config.frameBytesMax)
        : options.config.frameBytesMax,
    );
    // Not events.once: it rejects on 'error', and a client's RST is an 'error' before 'close'.
    this.closed = new Promise((resolve) => this.socket.once('close', () => resolve()));
    this.socket.on('data', (chunk: Buffer) => this.received(chunk));
    this.socket.on('error', (error) => this.close(`socket error: ${error.message}`));
    this.socket.on('close', () => this.close('closed by the client'));
    this.socket.setTimeout(this.config.idleMsMax, () => {
      if (this.inFlight === 0) this.close(`idle for idleMsMax (${this.config.idleMsMax} ms)`);
    });
    if (this.config.saslRequired) {
      this.authenticateTimer = setTimeout(
        () =>
          this.close(
            `not authenticated within authenticateMsMax (${this.config.authenticateMsMax} ms)`,
          ),
        this.config.authenticateMsMax,
      );
    }
  }

  /** Ends the connection now: requests in progress are abandoned (their appends still finish). */
  close(reason: string, error?: unknown): void {
    if (this.closing.signal.aborted) return;
    this.closing.abort();
    if (this.authenticateTimer) clearTimeout(this.authenticateTimer);
    this.logger.debug({ reason, err: error }, 'Kafka connection closed');
    this.socket.destroy();
  }

  private received(chunk: Buffer): void {
    if (this.closing.signal.aborted) return;
    try {
      for (const frame of this.splitter.push(chunk)) this.waiting.push(frame);
    } catch (error) {
      this.close('a malformed frame', error);
      return;
    }
    this.pump();
  }

  /** Starts what the in-flight bound allows, and reads the socket only while there is room. */
  private pump(): void {
    while (
      !this.closing.signal.aborted &&
      this.waiting.length > 0 &&
      this.inFlight < this.config.inFlightRequestsMax
    ) {
      this.start(this.waiting.shift()!);
    }
    if (this.closing.signal.aborted) return;
    if (this.waiting.length > 0 || this.inFlight >= this.config.inFlightRequestsMax) {
      this.socket.pause();
    } else {
      this.socket.resume();
    }
  }

  private start(frame: Buffer): void {
    this.inFlight++;
    const outcome = this.handle(frame);
    this.answered = this.answered.then(async () => {
      const { chunks, close, written } = await outcome;
      if (this.closing.signal.aborted) return;
      if (chunks.length > 0 && !this.write(chunks, written ?? [])) {
        try {
          await once(this.socket, 'drain', { signal: this.closing.signal });
        } catch {
          return;
        }
      }
      if (close !== null) {
        // end() lets the last answer (a SASL failure) reach the client before the close.
        this.closing.abort();
        this.logger.debug({ reason: close }, 'Kafka connection closed');
        this.socket.end();
        return;
      }
      this.inFlight--;
      this.pump();
    });
  }

  private write(chunks: Buffer[], written: readonly (() => void)[]): boolean {
    this.socket.cork();
    let room = true;
    const last = chunks.length - 1;
    chunks.forEach((chunk, i) => {
      // The last chunk's callback comes once every chunk before it has gone too; a failed write
      // calls none, so a buffer the socket may still hold is never given back.
      const done =
        i === last && written.length > 0
          ? (error?: Error | null) => {
              if (!error) for (const callback of written) callback();
            }
          : undefined;
      room = this.socket.write(chunk, done);
    });
    this.socket.uncork();
    return room;
  }

  /** The outcome of one frame; never rejects. */
  private async handle(frame: Buffer): Promise<Outcome> {
    if (this.bareSaslNext) {
      this.bareSaslNext = false;
      return this.authenticate(frame)
        ? { chunks: [EMPTY_FRAME], close: null }
        : { chunks: [], close: 'SASL/PLAIN authentication failed' };
    }
    let request: ReturnType<typeof decodeRequest>;
    try {
      request = decodeRequest(frame, { elementsMax: this.config.requestElementsMax });
    } catch (error) {
      return this.closeWith('a request that does not decode', error);
    }
    if (request.kind !== 'request') return this.unsupported(request);
    if (this.config.saslOffered && this.principal === null) {
      if (this.config.saslRequired && !PRE_AUTHENTICATION_APIS.has(request.apiKey)) {
        return this.closeWith(`API ${request.apiKey} before SASL authentication`);
      }
      if (request.apiKey === ApiKey.SaslHandshake) return this.handshake(request);
      if (request.apiKey === ApiKey.SaslAuthenticate) return this.saslAuthenticate(request);
    }
    const handler = this.handlers[request.apiKey];
    if (handler === undefined) return this.closeWith(`API ${request.apiKey} is not served`);
    try {
      const written: (() => void)[] = [];
      const body = await handler(request.body, this.context(request, written));
      if (body === NO_RESPONSE) return { chunks: [], close: null };
      return {
        chunks: encodeResponseChunks(
          request.apiKey,
          request.apiVersion,
          request.correlationId,
          body as never,
        ),
        close: null,
        written,
      };
    } catch (error) {
      if (error instanceof CloseConnection) return this.closeWith(error.message);
      if (this.closing.signal.aborted) return { chunks: [], close: null };
      this.logger.error({ err: error, apiKey: request.apiKey }, 'a Kafka handler failed');
      return this.closeWith(`API ${request.apiKey} failed`, error);
    }
  }

  /**
   * An unknown API closes the connection, as does an unsupported version of any API but
   * ApiVersions, which gets (KIP-511) v0 with UNSUPPORTED_VERSION and the ranges served, so the
   * client can retry with one of them.
   */
  private async unsupported(request: UnsupportedKafkaRequest): Promise<Outcome> {
    if (request.kind === 'unknown-api' || request.apiKey !== ApiKey.ApiVersions) {
      return this.closeWith(`${request.kind}: API ${request.apiKey} v${request.apiVersion}`);
    }
    const served = await this.handlers[ApiKey.ApiVersions]!({}, this.context(request));
    return {
      chunks: encodeResponseChunks(ApiKey.ApiVersions, 0, request.correlationId, {
        ...served,
        errorCode: ErrorCode.UNSUPPORTED_VERSION,
      }),
      close: null,
    };
  }

  /** `written` collects the request's onWritten callbacks; without it they are dropped. */
  private context(request: RequestHeader, written: (() => void)[] = []): KafkaRequestContext {
    return {
      connectionId: this.id,
      clientId: request.clientId,
      principal: this.principal?.username ?? null,
      viewWriter: this.principal?.viewWriter === true,
      may: (scope) =>
        !this.config.saslRequired || (this.principal?.scopes.includes(scope) ?? false),
      apiVersion: request.apiVersion,
      signal: this.closing.signal,
      broker: this.broker,
      onWritten: (callback) => void written.push(callback),
    };
  }

  private closeWith(reason: string, error?: unknown): Outcome {
    if (error !== undefined) this.logger.debug({ err: error }, reason);
    return { chunks: [], close: reason };
  }

  private handshake(request: KafkaRequest & { apiKey: typeof ApiKey.SaslHandshake }): Outcome {
    const accepted = request.body.mechanism === PLAIN_MECHANISM && !this.saslHandshaken;
    this.saslHandshaken ||= accepted;
    this.bareSaslNext = accepted && request.apiVersion === 0;
    const errorCode = accepted
      ? ErrorCode.NONE
      : this.saslHandshaken
        ? ErrorCode.ILLEGAL_SASL_STATE
        : ErrorCode.UNSUPPORTED_SASL_MECHANISM;
    return {
      chunks: encodeResponseChunks(
        ApiKey.SaslHandshake,
        request.apiVersion,
        request.correlationId,
        {
          errorCode,
          mechanisms: [PLAIN_MECHANISM],
        },
      ),
      close: null,
    };
  }

  private saslAuthenticate(
    request: KafkaRequest & { apiKey: typeof ApiKey.SaslAuthenticate },
  ): Outcome {
    const answer = (errorCode: number, errorMessage: string | null) =>
      encodeResponseChunks(ApiKey.SaslAuthenticate, request.apiVersion, request.correlationId, {
        errorCode,
        errorMessage,
        authBytes: Buffer.alloc(0),
        sessionLifetimeMs: 0,
      });
    if (!this.saslHandshaken) {
      return {
        chunks: answer(ErrorCode.ILLEGAL_SASL_STATE, 'SaslHandshake (PLAIN) comes first'),
        close: 'SaslAuthenticate before SaslHandshake',
      };
    }
    if (!this.authenticate(request.body.authBytes)) {
      return {
        chunks: answer(
          ErrorCode.SASL_AUTHENTICATION_FAILED,
          'authentication failed: the password must be one of the API keys',
        ),
        close: 'SASL/PLAIN authentication failed',
      };
    }
    return { chunks: answer(ErrorCode.NONE, null), close: null };
  }

  private authenticate(message: Buffer): boolean {
    this.principal =
      authenticatePlain(message, this.config.apiKeys) ??
      authenticateViewWriter(message, this.config.viewWriterSecret);
    if (this.principal === null) return false;
    this.splitter.frameBytesMax = this.config.frameBytesMax;
    if (this.authenticateTimer) clearTimeout(this.authenticateTimer);
    this.logger.debug({ principal: this.principal.username }, 'Kafka connection authenticated');
    return true;
  }
}
