/**
 * Calls between threads of one process over a MessagePort: the transport under the log and serve
 * contracts when `tailbase start` runs the log-node and the serve-node on threads of their own
 * (port-log-client.ts, port-serve-client.ts). A call is `{id, method, args}`; its answer `{id, value}` or `{id, error}`
 * with a TailbaseError's status and body, so a refusal crosses the thread as the same error; a
 * caller's AbortSignal becomes a `{cancel: id}` the answering side turns into its own abort.
 */
import type { MessagePort, Transferable } from 'node:worker_threads';
import { errorFromBody, TailbaseError } from './errors.js';

interface Call {
  id: number;
  method: string;
  args: unknown[];
  /** The call carries an AbortSignal: the answering side makes one, aborted by a `cancel`. */
  cancellable: boolean;
}

interface Cancel {
  cancel: number;
}

type Answer = { id: number; value: unknown } | { id: number; error: EncodedError };

export interface EncodedError {
  status: number;
  body: ReturnType<TailbaseError['toBody']>;
}

export function encodeError(error: unknown): EncodedError {
  if (error instanceof TailbaseError) return { status: error.status, body: error.toBody() };
  // A bug on the other thread: it is logged there; this side answers 500 like an HTTP peer would.
  return {
    status: 500,
    body: { error: { code: 'internal', message: 'internal error on the serving thread' } },
  };
}

export function decodeError(encoded: EncodedError): TailbaseError {
  return errorFromBody(encoded.status, encoded.body);
}

/** The calling side of a port. */
export class PortCaller {
  private nextId = 1;
  private readonly pending = new Map<
    number,
    { resolve(value: unknown): void; reject(error: Error): void }
  >();

  constructor(private readonly port: MessagePort) {
    port.on('message', (answer: Answer) => {
      const call = this.pending.get(answer.id);
      if (call === undefined) return;
      this.pending.delete(answer.id);
      if ('error' in answer) call.reject(decodeError(answer.error));
      else call.resolve(answer.value);
    });
  }

  /** `transfer`: buffers of `args` to move to the other thread rather than copy. */
  call<T>(
    method: string,
    args: unknown[],
    signal?: AbortSignal,
    transfer: Transferable[] = [],
  ): Promise<T> {
    signal?.throwIfAborted();
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      const aborted = () => {
        this.pending.delete(id);
        this.port.postMessage({ cancel: id } satisfies Cancel);
        reject(signal?.reason as Error);
      };
      this.pending.set(id, {
        resolve: (value) => {
          signal?.removeEventListener('abort', aborted);
          resolve(value as T);
        },
        reject: (error) => {
          signal?.removeEventListener('abort', aborted);
          reject(error);
        },
      });
      signal?.addEventListener('abort', aborted, { once: true });
      this.port.postMessage(
        { id, method, args, cancellable: signal !== undefined } satisfies Call,
        transfer,
      );
    });
  }

  /** Every call still out fails with `error` (the other thread is gone). */
  failAll(error: Error): void {
    for (const call of this.pending.values()) call.reject(error);
    this.pending.clear();
  }
}

/**
 * A method the answering side serves: the call's arguments, and the signal of a cancellable call.
 * Its value may name buffers to transfer rather than copy (`transfer`).
 */
export type PortMethod = (
  args: unknown[],
  signal: AbortSignal | undefined,
) => Promise<{ value: unknown; transfer?: Transferable[] }>;

/** A method's plain answer: its value, nothing transferred. */
export async function answered(result: Promise<unknown>): Promise<{ value: unknown }> {
  return { value: await result };
}

/** The answering side of a port: each call runs its method and answers once. */
export function answerPort(
  port: MessagePort,
  methods: Readonly<Record<string, PortMethod>>,
  onBug: (error: unknown) => void,
): void {
  const cancels = new Map<number, AbortController>();
  port.on('message', (message: Call | Cancel) => {
    if ('cancel' in message) {
      cancels.get(message.cancel)?.abort(new Error('the caller cancelled'));
      return;
    }
    const { id, method, args, cancellable } = message;
    const controller = cancellable ? new AbortController() : undefined;
    if (controller) cancels.set(id, controller);
    const run = Object.hasOwn(methods, method)
      ? methods[method](args, controller?.signal)
      : Promise.reject(new Error(`no method ${method} on this port`));
    run
      .then(
        ({ value, transfer }) => port.postMessage({ id, value } satisfies Answer, transfer),
        (error: unknown) => {
          // A call its caller cancelled (it answered on its own, e.g. at a wait's bound) fails
          // as it should.
          if (!(error instanceof TailbaseError) && !controller?.signal.aborted) onBug(error);
          port.postMessage({ id, error: encodeError(error) } satisfies Answer);
        },
      )
      .finally(() => {
        if (controller) cancels.delete(id);
      });
  });
}

/** A buffer that crossed a port arrives as a Uint8Array: the same bytes as a Buffer, no copy. */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
}

/**
 * Bytes to send across a port: copied into a buffer of their own, which is transferred. The
 * original may be a view into Node's shared pool, and transferring that would detach the pool.
 */
export function ownBytes(bytes: Uint8Array): { bytes: Uint8Array; transfer: ArrayBuffer } {
  const copy = new Uint8Array(bytes.length);
  copy.set(bytes);
  return { bytes: copy, transfer: copy.buffer };
}
