/**
 * The history recorder: what concurrent clients asked of the public HTTP API and what each was
 * told, with invocation and completion times on one monotonic clock (performance.now()).
 *
 * Every write carries a value unique to it, `{"w": writeId, "s": session, "t": "w<writeId> ..."}`,
 * so every read and every log record names the write it came from. Deletes are tombstones (no
 * value), so they are told apart by the offsets single DELETEs answer and by counting.
 *
 * Outcomes:
 * - `ok`: a 2xx, with what it answered (offset, value read, token);
 * - `fail`: a definite refusal, nothing was stored: a 4xx, or a 503 whose code the gateway
 *   documents as "not stored" (gateway/partition-writer.ts: `log_unavailable` and
 *   `append_queue_full` after every attempt was refused before the log could take it;
 *   `overloaded` and `shutting_down` from `admit`, before anything is queued). A bulk write spans
 *   partitions, and one partition refusing says nothing of the others, so for bulks only a 4xx and
 *   the `admit` codes are definite;
 *   A connection refused at connect (ECONNREFUSED: the gateway is down) never sent the request,
 *   so it is a definite refusal too;
 * - `unknown`: everything else (timeouts, cut connections, `write_outcome_unknown`, other 5xx).
 */
import { performance } from 'node:perf_hooks';

export type OpKind = 'put' | 'delete' | 'bulk' | 'read' | 'strong-read' | 'scan' | 'search';
export type Outcome = 'ok' | 'fail' | 'unknown';

/** One document write: a put (value names writeId) or a delete (a tombstone). */
export interface WriteItem {
  writeId: number;
  collection: string;
  key: string;
  delete: boolean;
}

/** What a read saw of one key: the write whose value it holds, or null for no document. */
export interface Seen {
  key: string;
  writeId: number | null;
  offset: number | null;
}

export interface Op {
  id: number;
  session: number;
  kind: OpKind;
  collection: string;
  invokeMs: number;
  completeMs: number;
  outcome: Outcome;
  /** The HTTP status and error code, or the transport error, when not ok. */
  error?: string;
  /** put, delete, bulk: the writes. */
  writes?: WriteItem[];
  /** put, delete answered ok: where the log put it. */
  partition?: number;
  offset?: number;
  /** read, strong-read: the key asked for. */
  key?: string;
  /** read, strong-read, scan (ok): what was seen. */
  seen?: Seen[];
  /** scan: the prefix asked for and whether the answer had no further page. */
  prefix?: string;
  complete?: boolean;
  /** search: the write whose unique term was searched for, and the hits' write ids per key. */
  term?: number;
  /** The token the session sent (reads and writes carry it). */
  tokenSent?: string | null;
  tokenAnswered?: string | null;
}

/** One change-feed event, in the order the consumer received them, with its connection number. */
export interface FeedEvent {
  connection: number;
  collection: string;
  partition: number;
  offset: number;
  key: string;
  writeId: number | null;
  atMs: number;
}

export interface History {
  ops: Op[];
  feed: FeedEvent[];
  /** How many times the consumer (re)connected, and whether it reached the log's end at last. */
  feedConnections: number;
  feedCaughtUp: boolean;
}

export const now = () => performance.now();

/** Words the values share, one to four of them a value (some twice), so search ranks them. */
export const VALUE_WORDS = ['amber', 'birch', 'cobalt', 'delta', 'ember', 'fjord', 'garnet'];

/**
 * The value a write stores; `t` gives search a term unique to the write (`w<writeId>`) and words
 * shared with other writes, chosen by the write id so a replay of the log writes the same.
 */
export function writeValue(writeId: number, session: number): Record<string, unknown> {
  const words = Array.from(
    { length: 1 + (writeId % 4) },
    (_, i) => VALUE_WORDS[(writeId * 5 + i * i) % VALUE_WORDS.length],
  );
  return { w: writeId, s: session, t: `w${writeId} s${session} chaos ${words.join(' ')}` };
}

/** The write id a stored value names, or -1 for a value no write of this recorder wrote. */
export function writeIdOf(value: unknown): number {
  if (value === null || typeof value !== 'object') return -1;
  const w = (value as { w?: unknown }).w;
  return typeof w === 'number' && Number.isSafeInteger(w) ? w : -1;
}

const ADMIT_CODES = new Set(['overloaded', 'shutting_down']);
const NOT_STORED_CODES = new Set(['log_unavailable', 'append_queue_full', ...ADMIT_CODES]);

/** Whether an HTTP error answer to a write is a definite refusal (nothing stored). */
export function definiteRefusal(status: number, code: string | undefined, bulk: boolean): boolean {
  if (status >= 400 && status < 500) return true;
  if (status !== 503 || code === undefined) return false;
  return bulk ? ADMIT_CODES.has(code) : NOT_STORED_CODES.has(code);
}

export interface Answer {
  status: number;
  body: any;
  token: string | null;
}

/** One HTTP call, bounded by `timeoutMs`; throws on transport errors and timeouts. */
export async function request(
  url: string,
  method: string,
  body: string | undefined,
  headers: Record<string, string>,
  timeoutMs: number,
): Promise<Answer> {
  const response = await fetch(url, {
    method,
    headers,
    body,
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await response.text();
  let parsed: any = null;
  try {
    parsed = text === '' ? null : JSON.parse(text);
  } catch {
    parsed = { raw: text };
  }
  return { status: response.status, body: parsed, token: response.headers.get('tailbase-token') };
}

export interface RecorderOptions {
  /** The gateway's URL now (it may move when a node restarts). */
  url: () => string;
  timeoutMs: number;
}

/** Shared by every session: the operation log and the write-id counter. */
export class Recorder {
  readonly ops: Op[] = [];
  readonly feed: FeedEvent[] = [];
  feedConnections = 0;
  feedCaughtUp = false;
  private nextOp = 0;
  private nextWrite = 0;

  constructor(readonly options: RecorderOptions) {}

  writeId(): number {
    return this.nextWrite++;
  }

  history(): History {
    return {
      ops: this.ops,
      feed: this.feed,
      feedConnections: this.feedConnections,
      feedCaughtUp: this.feedCaughtUp,
    };
  }

  /** Runs one call and records it; `interpret` turns an answer into the op's fields and outcome. */
  async record(
    base: Omit<Op, 'id' | 'invokeMs' | 'completeMs' | 'outcome'>,
    call: () => Promise<Answer>,
    interpret: (answer: Answer, op: Op) => Outcome,
  ): Promise<Op> {
    const op: Op = {
      ...base,
      id: this.nextOp++,
      invokeMs: now(),
      completeMs: Infinity,
      outcome: 'unknown',
    };
    this.ops.push(op);
    try {
      const answer = await call();
      op.completeMs = now();
      op.outcome = interpret(answer, op);
      if (op.outcome !== 'ok') {
        op.error = `${answer.status} ${answer.body?.error?.code ?? ''}`.trim();
      }
    } catch (error) {
      op.completeMs = now();
      op.error = (error as Error).name === 'TimeoutError' ? 'timeout' : describe(error);
      // Refused at connect: the request never reached the gateway, nothing can be stored.
      op.outcome = op.error === 'ECONNREFUSED' ? 'fail' : 'unknown';
    }
    // A write whose outcome is unknown may take effect at any time after it began.
    if (op.outcome === 'unknown' && op.writes !== undefined) op.completeMs = Infinity;
    return op;
  }
}

function describe(error: unknown): string {
  const e = error as { message?: string; cause?: { code?: string } };
  return e.cause?.code ?? e.message ?? String(error);
}

/** A client session: one operation at a time, carrying the token its answers give it. */
export class Session {
  token: string | null = null;

  constructor(
    readonly id: number,
    private readonly recorder: Recorder,
  ) {}

  private headers(json: boolean, token: string | null = this.token): Record<string, string> {
    const headers: Record<string, string> = {};
    if (json) headers['content-type'] = 'application/json';
    if (token !== null) headers['tailbase-token'] = token;
    return headers;
  }

  private docUrl(collection: string, key?: string): string {
    const base = `${this.recorder.options.url()}/v1/collections/${collection}/docs`;
    return key === undefined ? base : `${base}/${encodeURIComponent(key)}`;
  }

  private call(url: string, method: string, body?: string, token = this.token, json = true) {
    return () =>
      request(url, method, body, this.headers(json, token), this.recorder.options.timeoutMs);
  }

  /** Keeps the answer's token: writes answer the merged one, reads the one they were served at. */
  private keep(answer: Answer): void {
    if (answer.token !== null) this.token = answer.token;
  }

  private writeOutcome(answer: Answer, bulk: boolean): Outcome {
    if (answer.status >= 200 && answer.status < 300) return 'ok';
    return definiteRefusal(answer.status, answer.body?.error?.code, bulk) ? 'fail' : 'unknown';
  }

  put(collection: string, key: string): Promise<Op> {
    const writeId = this.recorder.writeId();
    const body = JSON.stringify(writeValue(writeId, this.id));
    return this.recorder.record(
      {
        session: this.id,
        kind: 'put',
        collection,
        key,
        writes: [{ writeId, collection, key, delete: false }],
        tokenSent: this.token,
      },
      this.call(this.docUrl(collection, key), 'PUT', body),
      (answer, op) => this.singleWrite(answer, op),
    );
  }

  delete(collection: string, key: string): Promise<Op> {
    const writeId = this.recorder.writeId();
    return this.recorder.record(
      {
        session: this.id,
        kind: 'delete',
        collection,
        key,
        writes: [{ writeId, collection, key, delete: true }],
        tokenSent: this.token,
      },
      this.call(this.docUrl(collection, key), 'DELETE'),
      (answer, op) => this.singleWrite(answer, op),
    );
  }

  private singleWrite(answer: Answer, op: Op): Outcome {
    const outcome = this.writeOutcome(answer, false);
    if (outcome === 'ok') {
      op.partition = answer.body.partition;
      op.offset = answer.body.offset;
      op.tokenAnswered = answer.token;
      this.keep(answer);
    }
    return outcome;
  }

  /** Bulk: distinct keys, each a put or (when `deletes` says) a delete. */
  bulk(collection: string, keys: string[], deletes: boolean[]): Promise<Op> {
    const writes = keys.map((key, i) => ({
      writeId: this.recorder.writeId(),
      collection,
      key,
      delete: deletes[i],
    }));
    const body = writes
      .map((w) =>
        JSON.stringify({ key: w.key, value: w.delete ? null : writeValue(w.writeId, this.id) }),
      )
      .join('\n');
    return this.recorder.record(
      { session: this.id, kind: 'bulk', collection, writes, tokenSent: this.token },
      () =>
        request(
          this.docUrl(collection),
          'POST',
          body + '\n',
          { ...this.headers(false), 'content-type': 'application/x-ndjson' },
          this.recorder.options.timeoutMs,
        ),
      (answer, op) => {
        const outcome = this.writeOutcome(answer, true);
        if (outcome === 'ok') {
          op.tokenAnswered = answer.token;
          this.keep(answer);
        }
        return outcome;
      },
    );
  }

  /** A key read at the session's token (consistency=token), or a strong one (no token sent). */
  read(collection: string, key: string, strong: boolean): Promise<Op> {
    const url = this.docUrl(collection, key) + (strong ? '?consistency=strong' : '');
    const token = strong ? null : this.token;
    return this.recorder.record(
      {
        session: this.id,
        kind: strong ? 'strong-read' : 'read',
        collection,
        key,
        tokenSent: token,
      },
      this.call(url, 'GET', undefined, token, false),
      (answer, op) => {
        const missing = answer.status === 404 && answer.body?.error?.code === 'document_not_found';
        if (answer.status !== 200 && !missing) return answer.status < 500 ? 'fail' : 'unknown';
        op.seen = [
          missing
            ? { key, writeId: null, offset: null }
            : { key, writeId: writeIdOf(answer.body.value), offset: answer.body.offset },
        ];
        op.tokenAnswered = answer.token;
        if (!strong) this.keep(answer);
        return 'ok';
      },
    );
  }

  /** A range scan of the keys under `prefix`, one page of up to `limit`, at the token. */
  scan(collection: string, prefix: string, limit: number): Promise<Op> {
    const url = `${this.docUrl(collection)}?prefix=${encodeURIComponent(prefix)}&limit=${limit}`;
    return this.recorder.record(
      { session: this.id, kind: 'scan', collection, prefix, tokenSent: this.token },
      this.call(url, 'GET', undefined, this.token, false),
      (answer, op) => {
        if (answer.status !== 200) return answer.status < 500 ? 'fail' : 'unknown';
        op.seen = (answer.body.items as { key: string; value: unknown; offset: number }[]).map(
          (item) => ({ key: item.key, writeId: writeIdOf(item.value), offset: item.offset }),
        );
        op.complete = answer.body.cursor === null;
        op.tokenAnswered = answer.token;
        this.keep(answer);
        return 'ok';
      },
    );
  }

  /** Searches for the unique term of write `writeId`, at the token. */
  search(collection: string, writeId: number): Promise<Op> {
    const url =
      `${this.recorder.options.url()}/v1/collections/${collection}/search` +
      `?q=w${writeId}&limit=20`;
    return this.recorder.record(
      { session: this.id, kind: 'search', collection, term: writeId, tokenSent: this.token },
      this.call(url, 'GET', undefined, this.token, false),
      (answer, op) => {
        if (answer.status !== 200) return answer.status < 500 ? 'fail' : 'unknown';
        op.seen = (answer.body.hits as { key: string; value: unknown }[]).map((hit) => ({
          key: hit.key,
          writeId: writeIdOf(hit.value),
          offset: null,
        }));
        op.tokenAnswered = answer.token;
        this.keep(answer);
        return 'ok';
      },
    );
  }
}

/**
 * The change-feed consumer: follows every collection from the log start, NDJSON; after a cut
 * connection (or `limit` events, to exercise resuming on purpose) it reconnects with the token of
 * the last event it received.
 */
export class FeedConsumer {
  token: string | null = null;
  private stopped = false;
  private current: AbortController | null = null;
  private running: Promise<void> | null = null;

  constructor(
    private readonly recorder: Recorder,
    /** Events per connection before a voluntary reconnect. */
    private readonly limit: () => number,
    /**
     * The collections whose events are recorded (the ones the history writes); the others (the
     * views' topics, derived) are followed but not recorded.
     */
    private readonly recorded: (collection: string) => boolean = () => true,
  ) {}

  start(): void {
    this.running = this.loop();
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      try {
        await this.connect(this.limit());
      } catch {
        // Cut, refused or timed out: resume from the last token after a breath.
      }
      if (!this.stopped) await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  private async connect(limit: number): Promise<void> {
    const controller = new AbortController();
    this.current = controller;
    const connection = ++this.recorder.feedConnections;
    const query = new URLSearchParams({ limit: String(limit) });
    if (this.token !== null) query.set('token', this.token);
    // A paused node must not hold the consumer forever: no byte for 15 s ends the connection.
    let idle = setTimeout(() => controller.abort(), 15_000);
    try {
      const response = await fetch(`${this.recorder.options.url()}/v1/changes?${query}`, {
        signal: controller.signal,
      });
      if (!response.ok || response.body === null) {
        await response.text().catch(() => {});
        return;
      }
      let pending = '';
      const decoder = new TextDecoder();
      for await (const chunk of response.body) {
        clearTimeout(idle);
        idle = setTimeout(() => controller.abort(), 15_000);
        pending += decoder.decode(chunk as Uint8Array, { stream: true });
        let newline: number;
        while ((newline = pending.indexOf('\n')) >= 0) {
          const line = pending.slice(0, newline);
          pending = pending.slice(newline + 1);
          if (line.trim() === '') continue;
          const event = JSON.parse(line);
          if (event.error !== undefined) return; // the feed failed; resume from the token
          this.token = event.token;
          if (!this.recorded(event.collection)) continue;
          this.recorder.feed.push({
            connection,
            collection: event.collection,
            partition: event.partition,
            offset: event.offset,
            key: event.key,
            writeId: event.value === null ? null : writeIdOf(event.value),
            atMs: now(),
          });
        }
      }
    } finally {
      clearTimeout(idle);
      if (this.current === controller) this.current = null;
    }
  }

  /** Stops at once (the current connection is cut). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.current?.abort();
    await this.running;
  }
}
