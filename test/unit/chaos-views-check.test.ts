// Rule (g) of the chaos checker (test/chaos/views.ts) on hand-built reads: a stale token read of a
// view, a read of a view whole that mixes two versions' documents, a session that goes back to the
// old version after it saw the new one, a view that serves another definition than the one
// declared last, and one that differs from its recomputation each make an anomaly; the same reads
// done right make none.
import { describe, expect, it } from 'vitest';
import type { Anomaly, LogEntry } from '../chaos/check.js';
import {
  ChaosViews,
  checkViews,
  REDEFINED_VIEW,
  VIEW_SOURCE,
  type FinalViews,
  type ViewScan,
} from '../chaos/views.js';
import { collectionOffsets, TokenCodec } from '../../shared/token.js';

const codec = new TokenCodec('chaos-views-check', 4);
const token = (offset: number) =>
  codec.encode(collectionOffsets(VIEW_SOURCE, new Map([[0, offset]])));

/** Two puts of session 1 at offsets 0 and 1 of partition 0 (write ids 10 and 11). */
const LOG: LogEntry[] = [
  { collection: VIEW_SOURCE, partition: 0, offset: 0, key: 'a', writeId: 10 },
  { collection: VIEW_SOURCE, partition: 0, offset: 1, key: 'b', writeId: 11 },
];
const sessionOf = () => 1;

const V1 = 'last,low,n,s,top,total';
const V2 = 'last,low,mean,n,s,top,total';

function scan(session: number, shapes: string[]): ViewScan {
  return { session, invokeMs: 0, completeMs: 1, outcome: 'ok', shapes };
}

function run(
  fill: (views: ChaosViews) => void,
  finals: Partial<FinalViews> = {},
): { anomalies: Anomaly[]; views: ChaosViews } {
  const views = new ChaosViews(() => 'http://127.0.0.1:1', 1_000);
  fill(views);
  const anomalies: Anomaly[] = [];
  checkViews(
    views,
    LOG,
    sessionOf,
    (t) => codec.decode(t),
    { served: new Map(), expected: new Map(), definitions: new Map(), ...finals },
    anomalies,
  );
  return { anomalies, views };
}

const kinds = (anomalies: Anomaly[]) => anomalies.map((a) => a.kind);

describe('chaos rule (g): views', () => {
  it('passes reads that reflect their tokens and see one version at a time', () => {
    const { anomalies } = run((views) => {
      views.reads.push({
        session: 1,
        tokenSent: token(1),
        invokeMs: 0,
        completeMs: 1,
        outcome: 'ok',
        seen: { n: 2, top: 11 },
      });
      views.scans.push(scan(1, [V1, V1]), scan(1, [V2, V2]), scan(2, [V1]));
    });
    expect(anomalies).toEqual([]);
  });

  it('catches a token read behind its token', () => {
    const { anomalies } = run((views) => {
      views.reads.push({
        session: 1,
        tokenSent: token(1),
        invokeMs: 0,
        completeMs: 1,
        outcome: 'ok',
        seen: { n: 1, top: 10 },
      });
    });
    expect(kinds(anomalies)).toEqual(['view-stale-read']);
  });

  it("catches a read whole that mixes two versions' documents, or documents of neither", () => {
    const { anomalies } = run((views) => {
      views.scans.push(scan(1, [V1, V2]), scan(2, ['n,s']));
    });
    expect(kinds(anomalies)).toEqual(['view-read-mixed-versions', 'view-read-mixed-versions']);
  });

  it('catches a session that reads the old version after it saw the new one', () => {
    const { anomalies } = run((views) => {
      views.scans.push(scan(1, [V2]), scan(1, [V1]));
    });
    expect(kinds(anomalies)).toEqual(['view-version-went-back']);
  });

  it('catches a view that serves another definition, or differs from its recomputation', () => {
    const key = JSON.stringify([1]);
    const { anomalies } = run(() => undefined, {
      definitions: new Map([[REDEFINED_VIEW, { from: VIEW_SOURCE }]]),
      served: new Map([[REDEFINED_VIEW, new Map([[key, { s: 1, n: 1 }]])]]),
      expected: new Map([[REDEFINED_VIEW, new Map([[key, { n: 2, s: 1 }]])]]),
    });
    expect(kinds(anomalies)).toEqual(['view-definition-differs', 'view-differs-from-log']);
  });

  it('compares documents whatever the order of their fields', () => {
    const key = JSON.stringify([1]);
    const { anomalies } = run(() => undefined, {
      served: new Map([[REDEFINED_VIEW, new Map([[key, { s: 1, n: 2 }]])]]),
      expected: new Map([[REDEFINED_VIEW, new Map([[key, { n: 2, s: 1 }]])]]),
    });
    expect(anomalies).toEqual([]);
  });
});
