/**
 * What an API handler is: a function from a decoded request body (shared/kafka: Kafka's field
 * names in camelCase, int64 as bigint) to a response body, which the listener encodes at the
 * request's version. Handlers never look at the version unless the data itself means something
 * else in it; the codec fills defaults for fields a version lacks.
 */

import type { Scope } from '../../shared/api-keys.js';

/** The broker a client reached: what Metadata and FindCoordinator name. */
export interface KafkaBroker {
  nodeId: number;
  host: string;
  port: number;
}

export interface KafkaRequestContext {
  connectionId: number;
  clientId: string | null;
  /** The SASL/PLAIN username once authenticated; null on a listener that needs no SASL. */
  principal: string | null;
  /** Whether the connection authenticated with the cluster secret as a view processor (sasl.ts). */
  viewWriter: boolean;
  /**
   * Whether the connection's key has this scope (read: consume, groups, offsets; write: produce;
   * admin: create topics). Always true on a listener without SASL (loopback, no keys).
   */
  may(scope: Scope): boolean;
  apiVersion: number;
  /** Aborted when the connection closes: long waits end then. */
  signal: AbortSignal;
  broker: KafkaBroker;
  /**
   * Calls `callback` once the answer has been written to the socket (its bytes are the kernel's),
   * never when it was not: a Fetch gives its read buffers back then.
   */
  onWritten(callback: () => void): void;
}

// Bodies are checked by the codec against the API's declaration, on the way in and out; a
// handler table indexed by a runtime key cannot carry each API's body type.
export type KafkaHandler = (body: any, context: KafkaRequestContext) => Promise<object> | object;
export type KafkaHandlers = Partial<Record<number, KafkaHandler>>;

/** A handler's answer for a request Kafka never answers (Produce with acks=0). */
export const NO_RESPONSE: object = Object.freeze({ noResponse: true });

/**
 * Thrown by a handler when Kafka's answer is to close the connection (a failed acks=0 Produce,
 * whose client cannot be told otherwise). The listener logs `message` and closes.
 */
export class CloseConnection extends Error {
  override name = 'CloseConnection';
}
