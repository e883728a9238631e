/**
 * The brute-force model of a view: every source document read back from the source's log over
 * the log API (the last record of each key, in offset order per partition), then the view
 * computed from that set alone, to compare with what the view serves. Sums use the exact-sum
 * rounding (tested on its own in test/unit/view-exact-sum.test.ts) over the set, in key order.
 */
import { decodeRecords, iterateBatches } from '../../shared/batch-codec.js';
import { matches, parseFilter } from '../../shared/filter/index.js';
import type { LogClient } from '../../shared/log-api.js';
import type { ViewDefinition } from '../../shared/view-definition.js';
import { scaled, unscaled } from '../../views/exact-sum.js';

export interface SourceDoc {
  key: string;
  doc: Record<string, unknown>;
  /** (timestamp, partition, offset) of its record. */
  at: [number, number, number];
}

/** The current documents of a topic, from its log. */
export async function readSourceDocuments(
  log: LogClient,
  topic: string,
  partitions: number,
): Promise<Map<string, SourceDoc>> {
  const docs = new Map<string, SourceDoc>();
  const ends = await log.offsets();
  for (let partition = 0; partition < partitions; partition++) {
    const end = ends.find((o) => o.topic === topic && o.partition === partition)?.endOffset ?? 0;
    let offset = 0;
    while (offset < end) {
      const read = await log.read(topic, partition, offset, { maxBytes: 1024 * 1024 });
      const from = offset;
      for (const batch of iterateBatches(read.batches)) {
        for (const record of decodeRecords(batch.bytes)) {
          if (record.offset < from) continue;
          if (record.value === null) docs.delete(record.key);
          else {
            const doc = JSON.parse(Buffer.from(record.value).toString('utf8'));
            docs.set(record.key, {
              key: record.key,
              doc,
              at: [record.timestampMs, partition, record.offset],
            });
          }
        }
        offset = batch.header.baseOffset + batch.header.lastOffsetDelta + 1;
      }
      if (offset === from) break;
    }
  }
  return docs;
}

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
