/**
 * Views under the nemesis (issue 29 in issue 15's suite), on the embedded target, where the view
 * processors run: each session declares two grouped views of collection `ca` (the same
 * definitions, so every declaration after the first is a no-op) and, between its operations,
 * reads its own group of one of them with its token. Rule (g):
 * - a view read with token T reflects every record of `ca` at or below T's offsets. `cv_events`
 *   is windowed on `w` (the write id as epoch ms: every write falls in the first day's window,
 *   which never closes), so it counts events, never takes one back, and its group of session s
 *   must count at least the puts of s at or below T (and its `top` be at least their greatest
 *   write id); a 404 is stale when there was one. A read that counts more puts than the log holds
 *   of s is wrong too;
 * - after healing, each view read whole (`consistency=strong`: after the processor reached the
 *   source's end) equals a brute-force recomputation from the source's log as read back: the
 *   current documents grouped by session (`cv_docs`), every put an event (`cv_events`).
 * View reads are outside the history: rules (a) to (f) are about documents.
 */
import type { TokenOffsets } from '../../shared/token.js';
import { offsetsOf } from '../../shared/token.js';
import type { Anomaly, LogEntry } from './check.js';
import { now, request, type Session } from './history.js';

export const VIEW_SOURCE = 'ca';

const WINDOW_START = '1970-01-01T00:00:00.000Z';
const WINDOW_END = '1970-01-02T00:00:00.000Z';

export const CHAOS_VIEWS: Record<string, unknown> = {
  cv_docs: {
    from: VIEW_SOURCE,
    groupBy: ['s'],
    aggregates: { n: 'count()', total: 'sum(w)', top: 'max(w)' },
  },
  cv_events: {
    from: VIEW_SOURCE,
    groupBy: ['s'],
    aggregates: { n: 'count()', top: 'max(w)' },
    window: { field: 'w', size: '1d' },
  },
};

/** One read of a session's own group of `cv_events`, with the session's token. */
export interface ViewRead {
  session: number;
  tokenSent: string | null;
  invokeMs: number;
  completeMs: number;
  outcome: 'ok' | 'fail' | 'unknown';
  error?: string;
  /** What the group held (ok): its count and greatest write id; null: no such group (404). */
  seen?: { n: number; top: number } | null;
}

export interface ViewStats {
  declarations: { ok: number; failed: number };
  reads: Record<ViewRead['outcome'], number>;
  /** Ok token reads whose token named `ca` and that had puts of their session to reflect. */
  heldReads: number;
  /** Final documents compared, over both views. */
  finalDocs: number;
}

/** One in this many session operations is followed by a view read. */
export const VIEW_READ_EVERY = 4;

export class ChaosViews {
  readonly reads: ViewRead[] = [];
  readonly declarations = { ok: 0, failed: 0 };

  constructor(
    private readonly url: () => string,
    private readonly timeoutMs: number,
  ) {}

  /** PUTs both definitions; answers whether both were taken. */
  async declare(): Promise<boolean> {
    for (const [name, definition] of Object.entries(CHAOS_VIEWS)) {
      try {
        const answer = await request(
          `${this.url()}/v1/views/${name}`,
          'PUT',
          JSON.stringify(definition),
          { 'content-type': 'application/json' },
          this.timeoutMs,
        );
        if (answer.status !== 200) {
          this.declarations.failed += 1;
          return false;
        }
      } catch {
        this.declarations.failed += 1;
        return false;
      }
    }
    this.declarations.ok += 1;
    return true;
  }

  /** Reads the session's own group of `cv_events` with its token. */
  async readOwnGroup(session: Session): Promise<void> {
    const key = encodeURIComponent(JSON.stringify([session.id, WINDOW_START, WINDOW_END]));
    const read: ViewRead = {
      session: session.id,
      tokenSent: session.token,
      invokeMs: now(),
      completeMs: Infinity,
      outcome: 'unknown',
    };
    this.reads.push(read);
    const headers: Record<string, string> = {};
    if (session.token !== null) headers['tailbase-token'] = session.token;
    try {
      const answer = await request(
        `${this.url()}/v1/collections/cv_events/docs/${key}`,
        'GET',
        undefined,
        headers,
        this.timeoutMs,
      );
      read.completeMs = now();
      if (answer.status === 200) {
        read.outcome = 'ok';
        read.seen = { n: answer.body.value.n, top: answer.body.value.top };
      } else if (answer.status === 404 && answer.body?.error?.code === 'document_not_found') {
        read.outcome = 'ok';
        read.seen = null;
      } else {
        read.outcome = answer.status < 500 ? 'fail' : 'unknown';
        read.error = `${answer.status} ${answer.body?.error?.code ?? ''}`.trim();
      }
    } catch (error) {
      read.completeMs = now();
      read.error = (error as Error).message;
    }
  }
}

/** Both views read whole with `consistency=strong`: name → key → document. */
export async function readFinalViews(
  url: string,
  timeoutMs: number,
): Promise<Map<string, Map<string, unknown>>> {
  const views = new Map<string, Map<string, unknown>>();
  for (const name of Object.keys(CHAOS_VIEWS)) {
    const docs = new Map<string, unknown>();
    let cursor: string | null = null;
    for (let page = 0; page === 0 || cursor !== null; page++) {
      const after: string = cursor === null ? '' : `&cursor=${cursor}`;
      const answer = await request(
        `${url}/v1/collections/${name}/docs?consistency=strong&wait_ms=${timeoutMs}&limit=1000${after}`,
        'GET',
        undefined,
        {},
        timeoutMs,
      );
      if (answer.status !== 200) {
        throw new Error(
          `reading view ${name} answered ${answer.status} ${JSON.stringify(answer.body)}`,
        );
      }
      for (const item of answer.body.items) docs.set(item.key, item.value);
      cursor = answer.body.cursor;
    }
    views.set(name, docs);
  }
  return views;
}

/** The views' documents recomputed by brute force from the source's records, in log order. */
export function expectedViews(
  log: readonly LogEntry[],
  sessionOf: (writeId: number) => number | undefined,
): Map<string, Map<string, unknown>> {
  const records = log
    .filter((e) => e.collection === VIEW_SOURCE)
    .sort((a, b) => a.partition - b.partition || a.offset - b.offset);
  const current = new Map<string, number | null>();
  for (const e of records) current.set(e.key, e.writeId);
  const docs = new Map<number, number[]>();
  for (const writeId of current.values()) {
    if (writeId === null) continue;
    const s = sessionOf(writeId) ?? -1;
    docs.set(s, [...(docs.get(s) ?? []), writeId]);
  }
  const events = new Map<number, number[]>();
  for (const e of records) {
    if (e.writeId === null) continue;
    const s = sessionOf(e.writeId) ?? -1;
    events.set(s, [...(events.get(s) ?? []), e.writeId]);
  }
  const byDocs = new Map<string, unknown>();
  for (const [s, ws] of docs) {
    const total = ws.reduce((sum, w) => sum + w, 0);
    byDocs.set(JSON.stringify([s]), { s, n: ws.length, total, top: Math.max(...ws) });
  }
  const byEvents = new Map<string, unknown>();
  for (const [s, ws] of events) {
    byEvents.set(JSON.stringify([s, WINDOW_START, WINDOW_END]), {
      s,
      windowStart: WINDOW_START,
      windowEnd: WINDOW_END,
      n: ws.length,
      top: Math.max(...ws),
    });
  }
  return new Map([
    ['cv_docs', byDocs],
    ['cv_events', byEvents],
  ]);
}

/** Rule (g): the token reads of the views, and the views after healing against the log. */
export function checkViews(
  views: ChaosViews,
  log: readonly LogEntry[],
  sessionOf: (writeId: number) => number | undefined,
  decode: (token: string) => TokenOffsets,
  finals: Map<string, Map<string, unknown>>,
  anomalies: Anomaly[],
): ViewStats {
  const stats: ViewStats = {
    declarations: views.declarations,
    reads: { ok: 0, fail: 0, unknown: 0 },
    heldReads: 0,
    finalDocs: 0,
  };
  const puts = log.filter((e) => e.collection === VIEW_SOURCE && e.writeId !== null);
  views.reads.forEach((read, index) => {
    stats.reads[read.outcome] += 1;
    if (read.outcome !== 'ok' || read.tokenSent === null) return;
    const asked = offsetsOf(decode(read.tokenSent), VIEW_SOURCE);
    const own = puts.filter((e) => sessionOf(e.writeId!) === read.session);
    const below = own.filter((e) => e.offset <= (asked.get(e.partition) ?? -1));
    const n = read.seen?.n ?? 0;
    const top = read.seen?.top ?? -1;
    const needTop = below.reduce((max, e) => Math.max(max, e.writeId!), -1);
    const describe = `view read ${index} of session ${read.session}'s group saw ${JSON.stringify(read.seen)}`;
    if (below.length > 0) stats.heldReads += 1;
    if (n < below.length || top < needTop) {
      anomalies.push({
        rule: 'g',
        kind: 'view-stale-read',
        message: `${describe}; its token names ${below.length} puts of the session (the greatest write ${needTop}) at or below its offsets of ${VIEW_SOURCE}`,
        ops: [],
      });
    }
    if (n > own.length) {
      anomalies.push({
        rule: 'g',
        kind: 'view-read-beyond-log',
        message: `${describe}; the log holds ${own.length} puts of the session`,
        ops: [],
      });
    }
  });
  const expected = expectedViews(log, sessionOf);
  for (const [name, want] of expected) {
    const got = finals.get(name) ?? new Map<string, unknown>();
    for (const key of new Set([...want.keys(), ...got.keys()])) {
      stats.finalDocs += 1;
      const a = JSON.stringify(want.get(key) ?? null);
      const b = JSON.stringify(got.get(key) ?? null);
      if (a !== b) {
        anomalies.push({
          rule: 'g',
          kind: 'view-differs-from-log',
          message: `view ${name} key ${key}: served ${b}, recomputed from the log ${a}`,
          ops: [],
        });
      }
    }
  }
  return stats;
}
