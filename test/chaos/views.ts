/**
 * Views under the nemesis (issue 29 in issue 15's suite), on both targets: `tailbase start` runs
 * the view processors itself, a cluster's serve-nodes share them as members of the views group
 * (view-owners.ts follows which one runs each). Each session declares the views of collection `ca`
 * (the same definitions, so every declaration after the first is a no-op) and, between its
 * operations, reads its own group of `cv_events` with its token, or reads `cv_docs` whole with it.
 * A run may redefine `cv_docs` while the sessions write (a rebuild beside the serving version,
 * swapped in when caught up). Rule (g):
 * - a view read with token T reflects every record of `ca` at or below T's offsets. `cv_events`
 *   is windowed on `w` (the write id as epoch ms: every write falls in the first day's window,
 *   which never closes), so it counts events, never takes one back, and its group of session s
 *   must count at least the puts of s at or below T (and its `top` be at least their greatest
 *   write id); a 404 is stale when there was one. A read that counts more puts than the log holds
 *   of s is wrong too;
 * - a read of `cv_docs` whole sees one version: every document of the answer has the fields of
 *   one definition, and a session that saw the new one never sees the old one again;
 * - after healing, each view read whole (`consistency=strong`: after the processor reached the
 *   source's end) equals a brute-force recomputation, from the source's log as the log's Kafka
 *   listener answers it, of the definition that serves (test/integration/view-check.ts): the
 *   current documents grouped by session with count, sum, min, max and latest (`cv_docs`), every
 *   put an event (`cv_events`), and a filtered projection (`cv_keys`).
 * View reads are outside the history: rules (a) to (f) are about documents.
 */
import { KafkaLogClient } from '../../shared/kafka-log/index.js';
import { createLogger } from '../../shared/logger.js';
import type { TokenOffsets } from '../../shared/token.js';
import { offsetsOf } from '../../shared/token.js';
import type { ViewDefinition } from '../../shared/view-definition.js';
import {
  expectedView,
  expectedWindowedView,
  readSourceEvents,
  type SourceDoc,
} from '../integration/view-check.js';
import type { Anomaly, LogEntry } from './check.js';
import { now, request, type Answer, type Session } from './history.js';
import { PARTITIONS } from './nodes.js';

export const VIEW_SOURCE = 'ca';

const WINDOW_START = '1970-01-01T00:00:00.000Z';
const WINDOW_END = '1970-01-02T00:00:00.000Z';

/** The view a run may redefine while the sessions write, and its sessions read whole. */
export const REDEFINED_VIEW = 'cv_docs';

const DOCS_AGGREGATES = {
  n: 'count()',
  total: 'sum(w)',
  low: 'min(w)',
  top: 'max(w)',
  last: 'latest(w)',
};

export const CHAOS_VIEWS: Readonly<Record<string, ViewDefinition>> = {
  [REDEFINED_VIEW]: { from: VIEW_SOURCE, groupBy: ['s'], aggregates: DOCS_AGGREGATES },
  cv_events: {
    from: VIEW_SOURCE,
    groupBy: ['s'],
    // Every put an event: count and max only grow (the token reads' rule), and latest() and
    // min() over a session's every put, across partitions, are exact only in log order.
    aggregates: { n: 'count()', top: 'max(w)', total: 'sum(w)', low: 'min(w)', last: 'latest(w)' },
    window: { field: 'w', size: '1d' },
  },
  cv_keys: { from: VIEW_SOURCE, filter: 's != 0', select: ['s', 'w'] },
};

/** `cv_docs` redefined: one more aggregate, so each document says which version it is of. */
export const REDEFINITION: ViewDefinition = {
  ...CHAOS_VIEWS[REDEFINED_VIEW],
  aggregates: { ...DOCS_AGGREGATES, mean: 'avg(w)' },
};

/** The fields of a document of each version of `cv_docs`, sorted and joined. */
const VERSION_SHAPES = new Map(
  [CHAOS_VIEWS[REDEFINED_VIEW], REDEFINITION].map((d, i) => [
    ['s', ...Object.keys(d.aggregates!)].sort().join(','),
    i + 1,
  ]),
);

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

/** One read of `cv_docs` whole, with the session's token: the field sets of its documents. */
export interface ViewScan {
  session: number;
  invokeMs: number;
  completeMs: number;
  outcome: 'ok' | 'fail' | 'unknown';
  error?: string;
  /** Each document's fields, sorted and joined (ok). */
  shapes?: string[];
}

export interface ViewStats {
  declarations: { ok: number; failed: number };
  reads: Record<ViewRead['outcome'], number>;
  /** Ok token reads whose token named `ca` and that had puts of their session to reflect. */
  heldReads: number;
  /** Reads of `cv_docs` whole, and the ok ones that saw each version. */
  scans: Record<ViewScan['outcome'], number>;
  scansByVersion: Record<number, number>;
  /** The reads and scans not ok, by status and code (or transport error). */
  errors: Record<string, number>;
  /** The redefinition: acknowledged while the sessions wrote (null: none was asked for). */
  redefinedUnderLoad: boolean | null;
  /** Final documents compared, over every view. */
  finalDocs: number;
}

/** One in this many session operations is followed by a view read. */
export const VIEW_READ_EVERY = 4;
/** One in this many view reads reads `cv_docs` whole; the others a group of `cv_events`. */
export const VIEW_SCAN_EVERY = 3;

const JSON_HEADERS = { 'content-type': 'application/json' };

export class ChaosViews {
  readonly reads: ViewRead[] = [];
  readonly scans: ViewScan[] = [];
  readonly declarations = { ok: 0, failed: 0 };
  /** Whether `cv_docs` was redefined, and whether while the sessions wrote. */
  redefined: 'no' | 'under-load' | 'after-healing' = 'no';

  constructor(
    private readonly url: () => string,
    private readonly timeoutMs: number,
  ) {}

  /** PUTs every definition (the redefinition's, once it was taken); answers whether all were taken. */
  async declare(): Promise<boolean> {
    for (const name of Object.keys(CHAOS_VIEWS)) {
      if (!(await this.put(name, this.definitionOf(name)))) {
        this.declarations.failed += 1;
        return false;
      }
    }
    this.declarations.ok += 1;
    return true;
  }

  /** PUTs the redefinition of `cv_docs`; answers whether it was taken. */
  async redefine(underLoad: boolean): Promise<boolean> {
    if (this.redefined !== 'no') return true;
    const taken = await this.put(REDEFINED_VIEW, REDEFINITION);
    if (taken) this.redefined = underLoad ? 'under-load' : 'after-healing';
    return taken;
  }

  /** The definition that must serve at the end. */
  definitionOf(name: string): ViewDefinition {
    return name === REDEFINED_VIEW && this.redefined !== 'no' ? REDEFINITION : CHAOS_VIEWS[name];
  }

  /** One view read of a session, chosen by `roll` (1..VIEW_SCAN_EVERY). */
  async readAs(session: Session, roll: number): Promise<void> {
    if (roll === 1) await this.readDocs(session);
    else await this.readOwnGroup(session);
  }

  private async put(name: string, definition: ViewDefinition): Promise<boolean> {
    try {
      const answer = await request(
        `${this.url()}/v1/views/${name}`,
        'PUT',
        JSON.stringify(definition),
        JSON_HEADERS,
        this.timeoutMs,
      );
      return answer.status === 200;
    } catch {
      return false;
    }
  }

  /** Reads the session's own group of `cv_events` with its token. */
  async readOwnGroup(session: Session): Promise<void> {
    const key = encodeURIComponent(JSON.stringify([session.id, WINDOW_START, WINDOW_END]));
    const read: ViewRead = { ...invoked(session), tokenSent: session.token };
    this.reads.push(read);
    const answer = await this.get(`cv_events/docs/${key}`, session, read);
    if (answer?.status === 200) {
      read.outcome = 'ok';
      read.seen = { n: answer.body.value.n, top: answer.body.value.top };
    } else if (answer?.status === 404 && answer.body?.error?.code === 'document_not_found') {
      read.outcome = 'ok';
      read.seen = null;
      delete read.error;
    }
  }

  /** Reads `cv_docs` whole (one page: a group a session) with the session's token. */
  private async readDocs(session: Session): Promise<void> {
    const scan: ViewScan = invoked(session);
    this.scans.push(scan);
    const answer = await this.get(`${REDEFINED_VIEW}/docs?limit=1000`, session, scan);
    if (answer?.status === 200) {
      scan.outcome = 'ok';
      scan.shapes = (answer.body.items as { value: object }[]).map((item) =>
        Object.keys(item.value).sort().join(','),
      );
    }
  }

  /**
   * A GET of a view's route with the session's token: its answer, the read's completion time,
   * and its outcome and error when it is not a 2xx (the caller decides what else is ok); null
   * when it failed in transport.
   */
  private async get(route: string, session: Session, read: ViewScan): Promise<Answer | null> {
    const headers: Record<string, string> = {};
    if (session.token !== null) headers['tailbase-token'] = session.token;
    try {
      const answer = await request(
        `${this.url()}/v1/collections/${route}`,
        'GET',
        undefined,
        headers,
        this.timeoutMs,
      );
      read.completeMs = now();
      if (answer.status >= 300) {
        read.outcome = answer.status < 500 ? 'fail' : 'unknown';
        read.error = `${answer.status} ${answer.body?.error?.code ?? ''}`.trim();
      }
      return answer;
    } catch (error) {
      read.completeMs = now();
      read.error = (error as Error).message;
      return null;
    }
  }

  /** Ok token reads of a session's group begun at or after `sinceMs` (the history's clock). */
  okReadsSince(sinceMs: number): number {
    return this.reads.filter(
      (read) => read.outcome === 'ok' && read.tokenSent !== null && read.invokeMs >= sinceMs,
    ).length;
  }

  /** Whether a read of `cv_docs` whole saw documents of `version` (1: the first, 2: redefined). */
  sawVersion(version: 1 | 2): boolean {
    return this.scans.some(
      (scan) =>
        scan.outcome === 'ok' &&
        scan.shapes!.some((shape) => VERSION_SHAPES.get(shape) === version),
    );
  }
}

/** A view read of a session, begun now, its outcome unknown until it completes. */
function invoked(session: Session): ViewScan {
  return { session: session.id, invokeMs: now(), completeMs: Infinity, outcome: 'unknown' };
}

/** Pages of 1,000 documents a view read whole may take: far more than a run's views hold. */
const VIEW_PAGES_MAX = 100;

/** A view read whole with `consistency=strong`: key → document. */
async function readViewWhole(
  url: string,
  name: string,
  timeoutMs: number,
): Promise<Map<string, unknown>> {
  const docs = new Map<string, unknown>();
  let cursor: string | null = null;
  for (let page = 0; page === 0 || cursor !== null; page++) {
    if (page === VIEW_PAGES_MAX) throw new Error(`view ${name} has over ${VIEW_PAGES_MAX} pages`);
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
  return docs;
}

/** Each view as served at the end and as recomputed from the source's log. */
export interface FinalViews {
  served: Map<string, Map<string, unknown>>;
  expected: Map<string, Map<string, unknown>>;
  /** A view whose serving definition is not the one declared last: name → what serves. */
  definitions: Map<string, unknown>;
}

/**
 * After healing: waits (bounded) until no view is being rebuilt, reads every view whole with
 * `consistency=strong` and the source's log from the log's Kafka listener, again until the
 * source's end did not move in between (an append a gateway retried may land late), and
 * recomputes each view from that log by brute force.
 */
export async function finalViews(
  url: string,
  broker: string,
  views: ChaosViews,
  timeoutMs: number,
  waitMsMax: number,
): Promise<FinalViews> {
  const definitions = new Map<string, unknown>();
  const deadline = Date.now() + waitMsMax;
  for (const name of Object.keys(CHAOS_VIEWS)) {
    for (;;) {
      const info = await request(`${url}/v1/views/${name}`, 'GET', undefined, {}, timeoutMs).catch(
        () => null,
      );
      if (info?.status === 200 && info.body.rebuilding === null) {
        if (canonical(info.body.definition) !== canonical(views.definitionOf(name))) {
          definitions.set(name, info.body.definition);
        }
        break;
      }
      if (Date.now() > deadline) {
        throw new Error(`view ${name} still rebuilding: ${JSON.stringify(info?.body)}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
  const log = await KafkaLogClient.connect({
    bootstrap: [broker],
    logger: createLogger('kafka-log', 'silent'),
  });
  try {
    const endsOf = async () =>
      JSON.stringify(
        (await log.offsets())
          .filter((o) => o.topic === VIEW_SOURCE)
          .sort((a, b) => a.partition - b.partition)
          .map((o) => o.endOffset),
      );
    for (let attempt = 0; ; attempt++) {
      const before = await endsOf();
      const events = await readSourceEvents(log, VIEW_SOURCE, PARTITIONS);
      const served = new Map<string, Map<string, unknown>>();
      for (const name of Object.keys(CHAOS_VIEWS)) {
        served.set(name, await readViewWhole(url, name, timeoutMs));
      }
      if ((await endsOf()) !== before && attempt < 3) continue;
      const current = new Map<string, SourceDoc>();
      for (const event of events) {
        if (event.doc === null) current.delete(event.key);
        else current.set(event.key, event as SourceDoc);
      }
      const expected = new Map<string, Map<string, unknown>>();
      for (const name of Object.keys(CHAOS_VIEWS)) {
        const definition = views.definitionOf(name);
        expected.set(
          name,
          definition.window === undefined
            ? expectedView(definition, current)
            : expectedWindowedView(definition, events).docs,
        );
      }
      return { served, expected, definitions };
    }
  } finally {
    log.close();
  }
}

/** JSON text with every object's keys sorted: documents compared whatever their field order. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1)))
      : v,
  );
}

/** Rule (g): the token reads of the views, the reads of `cv_docs` whole, and the views at the end. */
export function checkViews(
  views: ChaosViews,
  log: readonly LogEntry[],
  sessionOf: (writeId: number) => number | undefined,
  decode: (token: string) => TokenOffsets,
  finals: FinalViews,
  anomalies: Anomaly[],
): ViewStats {
  const stats: ViewStats = {
    declarations: views.declarations,
    reads: { ok: 0, fail: 0, unknown: 0 },
    heldReads: 0,
    scans: { ok: 0, fail: 0, unknown: 0 },
    scansByVersion: {},
    errors: {},
    redefinedUnderLoad: views.redefined === 'no' ? null : views.redefined === 'under-load',
    finalDocs: 0,
  };
  for (const read of [...views.reads, ...views.scans]) {
    if (read.error !== undefined) stats.errors[read.error] = (stats.errors[read.error] ?? 0) + 1;
  }
  checkTokenReads(views, log, sessionOf, decode, stats, anomalies);
  checkScans(views, stats, anomalies);
  for (const [name, definition] of finals.definitions) {
    anomalies.push({
      rule: 'g',
      kind: 'view-definition-differs',
      message: `view ${name} serves ${JSON.stringify(definition)}, declared last ${JSON.stringify(views.definitionOf(name))}`,
      ops: [],
    });
  }
  for (const [name, want] of finals.expected) {
    const got = finals.served.get(name) ?? new Map<string, unknown>();
    for (const key of new Set([...want.keys(), ...got.keys()])) {
      stats.finalDocs += 1;
      const a = canonical(want.get(key) ?? null);
      const b = canonical(got.get(key) ?? null);
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

function checkTokenReads(
  views: ChaosViews,
  log: readonly LogEntry[],
  sessionOf: (writeId: number) => number | undefined,
  decode: (token: string) => TokenOffsets,
  stats: ViewStats,
  anomalies: Anomaly[],
): void {
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
    const describe =
      `view read ${index} of session ${read.session}'s group ` +
      `[${read.invokeMs.toFixed(1)}, ${read.completeMs.toFixed(1)}] saw ${JSON.stringify(read.seen)}`;
    if (below.length > 0) stats.heldReads += 1;
    if (n < below.length || top < needTop) {
      anomalies.push({
        rule: 'g',
        kind: 'view-stale-read',
        message: `${describe}; its token names ${below.length} puts of the session (the greatest write ${needTop}) at or below its offsets of ${VIEW_SOURCE} (${JSON.stringify(Object.fromEntries(asked))})`,
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
}

/** Every read of `cv_docs` whole saw one version, and no session went back to the old one. */
function checkScans(views: ChaosViews, stats: ViewStats, anomalies: Anomaly[]): void {
  const newest = new Map<number, number>();
  views.scans.forEach((scan, index) => {
    stats.scans[scan.outcome] += 1;
    if (scan.outcome !== 'ok') return;
    const versions = new Set(scan.shapes!.map((shape) => VERSION_SHAPES.get(shape) ?? -1));
    const describe = `read ${index} of ${REDEFINED_VIEW} whole by session ${scan.session}`;
    if (versions.has(-1) || versions.size > 1) {
      anomalies.push({
        rule: 'g',
        kind: 'view-read-mixed-versions',
        message: `${describe} saw documents of fields ${[...new Set(scan.shapes)].join(' | ')}`,
        ops: [],
      });
      return;
    }
    const [version] = versions;
    if (version === undefined) return;
    stats.scansByVersion[version] = (stats.scansByVersion[version] ?? 0) + 1;
    if (version < (newest.get(scan.session) ?? 0)) {
      anomalies.push({
        rule: 'g',
        kind: 'view-version-went-back',
        message: `${describe} saw version ${version} after the session had seen version ${newest.get(scan.session)}`,
        ops: [],
      });
    }
    newest.set(scan.session, Math.max(version, newest.get(scan.session) ?? 0));
  });
}
