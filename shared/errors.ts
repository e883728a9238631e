/**
 * One error type for every failure a client or a peer node may see: an HTTP status, a code a
 * machine can switch on, a message a person can act on, and details (offsets, limits).
 */
export type ErrorDetails = Record<string, unknown>;

export interface ErrorBody {
  error: { code: string; message: string } & ErrorDetails;
}

export class TailbaseError extends Error {
  override name = 'TailbaseError';
  readonly status: number;
  readonly code: string;
  readonly details: ErrorDetails;

  constructor(
    status: number,
    code: string,
    message: string,
    details: ErrorDetails = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.status = status;
    this.code = code;
    this.details = details;
  }

  toBody(): ErrorBody {
    return { error: { code: this.code, message: this.message, ...this.details } };
  }
}

export const badRequest = (code: string, message: string, details?: ErrorDetails) =>
  new TailbaseError(400, code, message, details);

export const notFound = (code: string, message: string, details?: ErrorDetails) =>
  new TailbaseError(404, code, message, details);

export const tooLarge = (code: string, message: string, details?: ErrorDetails) =>
  new TailbaseError(413, code, message, details);

export const unavailable = (code: string, message: string, details?: ErrorDetails) =>
  new TailbaseError(503, code, message, details);

/** The log's answer for a topic that does not exist (dropped, retired, or never created). */
export const noSuchTopic = (topic: string) =>
  new TailbaseError(404, 'unknown_topic', `topic ${topic} does not exist`, { topic });

/** Whether `error` is noSuchTopic's (or a peer's rebuilt from it). */
export function isUnknownTopic(error: unknown): boolean {
  return error instanceof TailbaseError && error.code === 'unknown_topic';
}

/** The error a JSON error body carries, with its status and details; undefined for any other body. */
export function errorInBody(status: number, body: unknown): TailbaseError | undefined {
  const error = (body as Partial<ErrorBody> | null)?.error;
  if (!error || typeof error.code !== 'string' || typeof error.message !== 'string') return;
  const { code, message, ...details } = error;
  return new TailbaseError(status, code, message, details);
}

/** Rebuilds a TailbaseError from a peer's JSON error body, keeping its status and details. */
export function errorFromBody(status: number, body: unknown): TailbaseError {
  if (status === 401 || status === 403) {
    // A node refusing another is a cluster set up wrong (its secret), never the caller's key.
    return new TailbaseError(
      502,
      'cluster_misconfigured',
      'a node of the cluster refused an internal call; check the cluster secret',
    );
  }
  return (
    errorInBody(status, body) ?? new TailbaseError(status, 'peer_error', `peer answered ${status}`)
  );
}
