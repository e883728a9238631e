// Proves a grouping's arithmetic over a real LMDB state: min, max and latest of groups whose keys
// are long (lmdb-js mis-reads ranges over long keys holding bytes below 27); and a window's grace
// in one partition's stream time: an out-of-order event inside it is applied, one past it is
// late and not applied, the stream time of another partition does not close its windows.
import { afterEach, describe, expect, it } from 'vitest';
import { parseViewDefinition } from '../../shared/view-definition.js';
import { GroupingArithmetic, type SourceDocument } from '../../views/grouping.js';
import { ViewState } from '../../views/view-state.js';
import { tempDir, type TempDir } from '../harness/temp-dir.js';

let dir: TempDir | undefined;
let state: ViewState | undefined;

afterEach(async () => {
  await state?.close();
  dir?.cleanup();
  state = undefined;
});

function grouping(definition: unknown): GroupingArithmetic {
  dir = tempDir('view-grouping');
  state = new ViewState(`${dir.path}/state.mdb`);
  const view = parseViewDefinition('v', definition);
  if (view.kind !== 'grouping') throw new Error('a grouping');
  return new GroupingArithmetic(view, state);
}

const source = (
  key: string,
  doc: Record<string, unknown>,
  partition: number,
  offset: number,
): SourceDocument => ({ key, doc, at: [1000 + offset, partition, offset] });

describe('views: grouping arithmetic', () => {
  it('min, max and latest of groups whose keys are 3 to 130 bytes long', () => {
    const g = grouping({
      from: 's',
      groupBy: ['page'],
      aggregates: { low: 'min(v)', top: 'max(v)', last: 'latest(v)' },
    });
    const pages = Array.from({ length: 128 }, (_, n) => '/'.padEnd(n, 'x'));
    const touched = new Set<string>();
    state!.env.transactionSync(() => {
      g.startRound();
      pages.forEach((page, n) => {
        g.apply(source(`a${n}`, { page, v: 3 }, 0, 2 * n), touched);
        g.apply(source(`b${n}`, { page, v: -5 }, 0, 2 * n + 1), touched);
      });
      g.endRound();
    });
    const wrong = pages.filter((page) => {
      const out = JSON.parse(g.output(JSON.stringify([page]))!);
      return out.low !== -5 || out.top !== 3 || out.last !== -5;
    });
    expect(wrong.map((page) => page.length)).toEqual([]);
  });

  it('applies an event inside grace, counts one past it late, per partition', () => {
    const g = grouping({
      from: 's',
      groupBy: ['page'],
      aggregates: { n: 'count()', low: 'min(v)' },
      window: { field: 'ts', size: '10m', grace: '1m' },
    });
    const minute = 60_000;
    const outcomes: string[] = [];
    const touched = new Set<string>();
    state!.env.transactionSync(() => {
      g.startRound();
      for (const [ts, partition, offset] of [
        [5 * minute, 0, 0], // window 0-10
        [10.5 * minute, 0, 1], // stream time 10.5: window 0-10 ended 0.5 min ago
        [9 * minute, 0, 2], // inside grace: applied
        [12 * minute, 0, 3], // stream time 12
        [8 * minute, 0, 4], // window 0-10 ended 2 min ago: late
        [7 * minute, 1, 0], // another partition, stream time 7: applied
      ]) {
        outcomes.push(
          g.applyEvent(source(`k${offset}`, { page: '/', ts, v: ts }, partition, offset), touched),
        );
      }
      g.endRound();
    });
    expect(outcomes).toEqual(['applied', 'applied', 'applied', 'applied', 'late', 'applied']);
    const first = JSON.stringify(['/', '1970-01-01T00:00:00.000Z', '1970-01-01T00:10:00.000Z']);
    expect(JSON.parse(g.output(first)!)).toMatchObject({ n: 3, low: 5 * minute });
  });
});
