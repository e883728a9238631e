/**
 * The brute-force model of a view: every source document read back from the source's log over
 * the log API (the last record of each key, in offset order per partition; a source that is a
 * view's topic has the serve-nodes' epoch rule applied first, `fenceRecords`), then the view
 * computed from that set alone, to compare with what the view serves. Sums use the exact-sum
 * rounding (tested on its own in test/unit/view-exact-sum.test.ts) over the set, in key order.
 * A windowed view is computed from every record instead (each an event), replaying each
 * partition's stream time in offset order to find which events missed a closed window.
 */
import { decodeRecords, iterateBatches, type StoredRecord } from '../../shared/batch-codec.js';
import { matches, parseFilter } from '../../shared/filter/index.js';
import type { LogClient } from '../../shared/log-api.js';
import type { ViewDefinition } from '../../shared/view-definition.js';
import { epochOf, fenceRecords } from '../../shared/view-epoch.js';
import { scaled, unscaled } from '../../views/exact-sum.js';

export interface SourceDoc {
  key: string;
  doc: Record<string, unknown>;
  /** (timestamp, partition, offset) of its record. */
  at: [number, number, number];
}

/**
 * How a source's records are read: `fenced` when the source is a view (its topic's claims and
 * records of a deposed writer's epoch are what no reader of the view sees).
 */
export interface SourceReading {
  fenced?: boolean;
}

/** The current documents of a topic, from its log. */
export async function readSourceDocuments(
  log: LogClient,
  topic: string,
  partitions: number,
  reading: SourceReading = {},
): Promise<Map<string, SourceDoc>> {
  const docs = new Map<string, SourceDoc>();
  for (const event of await readSourceEvents(log, topic, partitions, reading)) {
    if (event.doc === null) docs.delete(event.key);
    else docs.set(event.key, event as SourceDoc);
  }
  return docs;
}

/** Every record of a topic, partition by partition, in offset order (null: a tombstone). */
export async function readSourceEvents(
  log: LogClient,
  topic: string,
  partitions: number,
  reading: SourceReading = {},
): Promise<(Omit<SourceDoc, 'doc'> & { doc: Record<string, unknown> | null })[]> {
  const events: (Omit<SourceDoc, 'doc'> & { doc: Record<string, unknown> | null })[] = [];
  const ends = await log.offsets();
  for (let partition = 0; partition < partitions; partition++) {
    const end = ends.find((o) => o.topic === topic && o.partition === partition)?.endOffset ?? 0;
    const records: StoredRecord[] = [];
    let offset = 0;
    while (offset < end) {
      const read = await log.read(topic, partition, offset, { maxBytes: 1024 * 1024 });
      const from = offset;
      for (const batch of iterateBatches(read.batches)) {
        for (const record of decodeRecords(batch.bytes)) {
          if (record.offset >= from) records.push(record);
        }
        offset = batch.header.baseOffset + batch.header.lastOffsetDelta + 1;
      }
      if (offset === from) break;
    }
    const kept = reading.fenced === true ? fenceRecords(records, -1).kept : records;
    for (const record of kept) {
      events.push({
        key: record.key,
        doc: record.value === null ? null : JSON.parse(Buffer.from(record.value).toString('utf8')),
        at: [record.timestampMs, partition, record.offset],
      });
    }
  }
  return events;
}

/** A topic's last offset per partition that holds records: what a strong read of it needs. */
export async function lastOffsets(log: LogClient, topic: string): Promise<Map<number, number>> {
  return new Map(
    (await log.offsets())
      .filter((o) => o.topic === topic && o.endOffset > 0)
      .map((o) => [o.partition, o.endOffset - 1]),
  );
}

/**
 * A view's documents as a serve-node applies its topic (the epoch fence), each partition through
 * its end offset (partition → last offset): what a read waiting for those offsets sees.
 */
export async function viewThrough(
  log: LogClient,
  topic: string,
  ends: ReadonlyMap<number, number>,
): Promise<Record<string, unknown>> {
  const docs = new Map<string, unknown>();
  for (const [partition, end] of ends) {
    const read = await log.read(topic, partition, 0, { maxBytes: 1 << 20 });
    const records = [...iterateBatches(read.batches)]
      .flatMap((b) => decodeRecords(b.bytes))
      .filter((r) => r.offset <= end);
    for (const record of fenceRecords(records, -1).kept) {
      if (record.value === null) docs.delete(record.key);
      else docs.set(record.key, JSON.parse(Buffer.from(record.value).toString('utf8')));
    }
  }
  return Object.fromEntries(docs);
}

/** Whether an append's batch is a claim (shared/view-epoch.ts) rather than a view's output. */
export function isClaimBatch(bytes: Uint8Array): boolean {
  return [...iterateBatches(bytes)]
    .flatMap((b) => decodeRecords(b.bytes))
    .some((record) => epochOf(record)?.claim === true);
}

const DURATION_MS: Record<string, number> = { ms: 1, s: 1e3, m: 6e4, h: 36e5, d: 864e5 };
const ms = (text: string) => {
  const [, n, unit] = /^(\d+)([a-z]+)$/.exec(text)!;
  return Number(n) * DURATION_MS[unit];
};

/**
 * A windowed grouping's expected documents from every source record: per partition in offset
 * order, an event (an object passing the filter with an epoch-ms or RFC 3339 event time) moves
 * its partition's stream time, then joins each window [s, s + size), s a multiple of advance,
 * that holds it and did not end more than grace before the stream time. Also the late count.
 */
export function expectedWindowedView(
  definition: ViewDefinition,
  events: Awaited<ReturnType<typeof readSourceEvents>>,
): { docs: Map<string, Record<string, unknown>>; late: number } {
  const window = definition.window!;
  const size = ms(window.size);
  const advance = window.advance === undefined ? size : ms(window.advance);
  const grace = window.grace === undefined ? 0 : ms(window.grace);
  const filter = definition.filter ? parseFilter(definition.filter) : null;
  const streamTimes = new Map<number, number>();
  const members = new Map<string, SourceDoc>();
  let late = 0;
  for (const event of events) {
    const { doc } = event;
    if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) continue;
    if (filter !== null && !matches(filter, doc)) continue;
    const raw = doc[window.field];
    const t =
      typeof raw === 'number'
        ? Math.floor(raw)
        : typeof raw === 'string' && /[Tt ]\d{2}:\d{2}:\d{2}/.test(raw)
          ? Date.parse(raw)
          : NaN;
    if (Number.isNaN(t)) continue;
    const partition = event.at[1];
    const streamTime = Math.max(streamTimes.get(partition) ?? -Infinity, t);
    streamTimes.set(partition, streamTime);
    let missed = false;
    for (let start = Math.floor(t / advance) * advance; start > t - size; start -= advance) {
      if (streamTime > start + size + grace) {
        missed = true;
        continue;
      }
      const bounds = [new Date(start).toISOString(), new Date(start + size).toISOString()];
      const keys = [...definition.groupBy!.map((f) => doc[f] ?? null), ...bounds];
      members.set(`${JSON.stringify(keys)} ${partition} ${event.at[2]}`, {
        key: JSON.stringify(keys),
        doc: { ...doc, windowStart: bounds[0], windowEnd: bounds[1], [GROUP]: keys },
        at: event.at,
      });
    }
    if (missed) late++;
  }
  const docs = expectedView(
    { ...definition, filter: undefined, groupBy: [GROUP, ...definition.groupBy!] },
    members,
  );
  const out = new Map<string, Record<string, unknown>>();
  for (const [, doc] of docs) {
    const keys = doc[GROUP] as unknown[];
    const shaped: Record<string, unknown> = {};
    definition.groupBy!.forEach((f, i) => {
      shaped[f] = keys[i];
    });
    shaped.windowStart = keys.at(-2);
    shaped.windowEnd = keys.at(-1);
    for (const name of Object.keys(definition.aggregates!)) shaped[name] = doc[name];
    out.set(JSON.stringify(keys), shaped);
  }
  return { docs: out, late };
}

/** A field no source document holds: the whole window key, to group the members by. */
const GROUP = '\u0000window-key';

/** The view's expected documents, by output key. */
export function expectedView(
  definition: ViewDefinition,
  source: Map<string, SourceDoc>,
): Map<string, Record<string, unknown>> {
  const filter = definition.filter ? parseFilter(definition.filter) : null;
  const kept = [...source.values()]
    .filter(({ doc }) => filter === null || matches(filter, doc))
    .sort((a, b) => (a.key < b.key ? -1 : 1));
  const out = new Map<string, Record<string, unknown>>();
  if (definition.select) {
    for (const { key, doc } of kept) {
      out.set(
        key,
        Object.fromEntries(definition.select.filter((f) => f in doc).map((f) => [f, doc[f]])),
      );
    }
    return out;
  }
  const groups = new Map<string, SourceDoc[]>();
  for (const entry of kept) {
    const group = JSON.stringify(definition.groupBy!.map((f) => entry.doc[f] ?? null));
    groups.set(group, [...(groups.get(group) ?? []), entry]);
  }
  for (const [group, members] of groups) {
    const doc: Record<string, unknown> = {};
    definition.groupBy!.forEach((f, i) => {
      doc[f] = JSON.parse(group)[i];
    });
    for (const [name, text] of Object.entries(definition.aggregates!)) {
      const [, fn, field] = /^(\w+)\((.*)\)$/.exec(text)!;
      const numbers = members
        .map((m) => m.doc[field])
        .filter((v): v is number => typeof v === 'number');
      const sum = unscaled(numbers.reduce((s, x) => s + scaled(x), 0n));
      doc[name] = {
        count: () => members.length,
        sum: () => sum,
        avg: () => (numbers.length === 0 ? null : sum / numbers.length),
        min: () => (numbers.length === 0 ? null : Math.min(...numbers)),
        max: () => (numbers.length === 0 ? null : Math.max(...numbers)),
        latest: () => {
          const last = [...members].sort((a, b) => compareAt(a.at, b.at)).at(-1)!;
          return last.doc[field] ?? null;
        },
      }[fn]!();
    }
    out.set(group, doc);
  }
  return out;
}

function compareAt(a: SourceDoc['at'], b: SourceDoc['at']): number {
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return 0;
}
