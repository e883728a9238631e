// Proves the views topic's rules (shared/view-catalog.ts ViewRecords): a redefinition builds
// beside the version that serves and a swap makes it serve; a swap appended after a drop or after
// a newer redefinition changes nothing; and for every prefix of a history with redefinitions,
// abandonments, swaps, stale swaps, drops and declarations again, the records compaction keeps
// (each key's last, at its offset) give the same catalog as all of them. (A swap that raced a
// drop or a redefinition is refused by the catalog, but left as a key's last record it would read
// otherwise after compaction: views/view-host.ts appends swaps under the lock the routes take to
// append definitions, so tailbase never writes one.)
import { describe, expect, it } from 'vitest';
import {
  REBUILD_KEY_SUFFIX,
  type RebuildRecord,
  type SwapRecord,
  ViewRecords,
} from '../../shared/view-catalog.js';
import type { ViewDefinition } from '../../shared/view-definition.js';
import { seededRandom, testSeed } from '../harness/random.js';

interface Rec {
  key: string;
  value: Uint8Array | null;
  offset: number;
}

const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
const def = (field: string): ViewDefinition => ({
  from: 'orders',
  groupBy: [field],
  aggregates: { n: 'count()' },
});

/** Appends records to a history, offsets in order. */
class History {
  readonly records: Rec[] = [];
  private add(key: string, value: unknown): number {
    const offset = this.records.length;
    this.records.push({ key, value: value === null ? null : encode(value), offset });
    return offset;
  }
  declare(name: string, field: string): number {
    return this.add(name, def(field));
  }
  redefine(name: string, field: string, topic: string): number {
    const record: RebuildRecord = { definition: def(field), topic, targets: {}, retired: [] };
    return this.add(name + REBUILD_KEY_SUFFIX, record);
  }
  abandon(name: string): number {
    return this.add(name + REBUILD_KEY_SUFFIX, null);
  }
  swap(name: string, field: string, version: number, topic: string): number {
    const record: SwapRecord = { definition: def(field), version, topic, retired: [] };
    return this.add(name, record);
  }
  drop(name: string): void {
    this.add(name + REBUILD_KEY_SUFFIX, null);
    this.add(name, null);
  }
}

/** The catalog the records give, as plain data. */
function catalogOf(records: readonly Rec[]) {
  const replay = new ViewRecords();
  for (const { key, value, offset } of records) replay.apply(key, value, offset);
  return Object.fromEntries(
    [...replay.views].map(([name, view]) => [
      name,
      {
        definition: view.definition,
        version: view.version,
        topic: view.topic,
        rebuild: view.rebuild && {
          definition: view.rebuild.definition,
          version: view.rebuild.version,
          topic: view.rebuild.topic,
        },
      },
    ]),
  );
}

/** What compaction keeps: each key's last record, at its offset, in offset order. */
function compacted(records: readonly Rec[]): Rec[] {
  const last = new Map<string, Rec>();
  for (const record of records) last.set(record.key, record);
  return [...last.values()].sort((a, b) => a.offset - b.offset);
}

describe('the views topic records', () => {
  it('a redefinition builds beside the serving version; its swap makes it serve', () => {
    const h = new History();
    const v0 = h.declare('v', 'a');
    const v1 = h.redefine('v', 'b', 'v--1');
    expect(catalogOf(h.records).v).toEqual({
      definition: def('a'),
      version: v0,
      topic: 'v',
      rebuild: { definition: def('b'), version: v1, topic: 'v--1' },
    });
    h.swap('v', 'b', v1, 'v--1');
    expect(catalogOf(h.records).v).toEqual({
      definition: def('b'),
      version: v1,
      topic: 'v--1',
      rebuild: null,
    });
  });

  it('a swap appended after a drop, or after a newer redefinition, changes nothing', () => {
    const h = new History();
    h.declare('v', 'a');
    const v1 = h.redefine('v', 'b', 'v--1');
    h.drop('v');
    h.swap('v', 'b', v1, 'v--1');
    expect(catalogOf(h.records)).toEqual({});

    const g = new History();
    const w0 = g.declare('w', 'a');
    const w1 = g.redefine('w', 'b', 'w--1');
    const w2 = g.redefine('w', 'c', 'w--2');
    g.swap('w', 'b', w1, 'w--1');
    expect(catalogOf(g.records).w).toMatchObject({
      version: w0,
      rebuild: { version: w2, topic: 'w--2' },
    });
  });

  it("each key's last record gives the catalog all the records give, at every prefix", () => {
    const random = seededRandom(testSeed('view-records-compaction'));
    for (let run = 0; run < 200; run++) {
      const h = new History();
      /** Per view: whether it is declared, and its rebuild's version, if one is under way. */
      const live = new Map<string, number | null>();
      for (let step = 0; step < 30; step++) {
        const name = random.pick(['v', 'w']);
        const field = random.pick(['a', 'b', 'c', 'd']);
        const topic = `${name}--${step}`;
        const roll = random.int(1, 6);
        if (!live.has(name)) {
          if (roll <= 4) {
            h.declare(name, field);
            live.set(name, null);
          }
        } else if (roll === 1) {
          live.set(name, h.redefine(name, field, topic));
        } else if (roll === 2) {
          h.abandon(name);
          live.set(name, null);
        } else if (roll === 3 && live.get(name) !== null) {
          // The host swaps only the rebuild under way (under the lock declarations take too).
          h.swap(name, field, live.get(name)!, topic);
          live.set(name, null);
        } else if (roll === 4) {
          h.drop(name);
          live.delete(name);
        }
        expect(catalogOf(compacted(h.records))).toEqual(catalogOf(h.records));
      }
    }
  });
});
