// Proves the one rule for which topics are views' (shared/topic-kinds.ts), which a serve-node and a
// change feed both follow: a look that names a topic decides it a view's (if it is kept or was
// asked about); a look that began after one of a topic's fence headers was read and does not name
// it decides it a collection's; a topic no look named and of which no fence header was read stays
// unknown; a decision made, a later look that does not name the topic changes nothing; a drop of
// the name while a look runs leaves it undecided (and only that name), and a look begun after the
// drop decides afresh. Also `fenceHeaderAt`: the first record carrying a claim or an epoch.
import { describe, expect, it } from 'vitest';
import type { StoredRecord } from '../../shared/batch-codec.js';
import { fenceHeaderAt, TopicKinds } from '../../shared/topic-kinds.js';
import { claimHeaders, epochHeader } from '../../shared/view-epoch.js';

const record = (offset: number, headers: StoredRecord['headers']): StoredRecord => ({
  offset,
  key: 'k',
  value: null,
  timestampMs: 0,
  ...(headers === undefined ? {} : { headers }),
});
const other = { key: 'trace', value: new TextEncoder().encode('1') };
/** A side that keeps every topic the views topic names (as a serve-node hosting all). */
const keepsAll = () => true;

describe('TopicKinds', () => {
  it('decides a named topic a view, a headed one not named a collection, and leaves the rest unknown', () => {
    const kinds = new TopicKinds();
    const mark = kinds.lookBegins();
    const decided = kinds.decide(mark, new Set(['v', 'w']), ['v', 'c'], (topic) => topic !== 'w');
    expect(decided).toEqual(['v', 'c']);
    expect(kinds.of('v')).toBe('view');
    expect(kinds.of('c')).toBe('collection');
    // Named but neither kept nor asked about: not recorded (a topic the serve-node does not tail).
    expect(kinds.of('w')).toBe('unknown');
    // Neither named nor headed: nothing says what it is yet.
    expect(kinds.of('x')).toBe('unknown');
  });

  it('keeps a decision: a later look that does not name a view, or asks about a collection again, changes nothing', () => {
    const kinds = new TopicKinds();
    kinds.decide(kinds.lookBegins(), new Set(['v']), ['v', 'c'], keepsAll);
    expect(kinds.decide(kinds.lookBegins(), new Set(), ['c'], keepsAll)).toEqual(['c']);
    expect(kinds.of('v')).toBe('view');
    expect(kinds.of('c')).toBe('collection');
  });

  it('decides nothing of a name dropped while the look ran, and afresh in a look begun after', () => {
    const kinds = new TopicKinds();
    kinds.decide(kinds.lookBegins(), new Set(['v']), ['v'], keepsAll);
    const during = kinds.lookBegins();
    kinds.forget('v');
    expect(kinds.of('v')).toBe('unknown');
    // The look began before the drop: what it read of the views topic is of the old `v`.
    expect(kinds.decide(during, new Set(['v', 'u']), ['v', 'c'], keepsAll)).toEqual(['c']);
    expect(kinds.of('v')).toBe('unknown');
    expect(kinds.of('u')).toBe('view');
    expect(kinds.of('c')).toBe('collection');
    // A look that began after the drop decides the new `v`: a collection now.
    expect(kinds.decide(kinds.lookBegins(), new Set(['u']), ['v'], keepsAll)).toEqual(['v']);
    expect(kinds.of('v')).toBe('collection');
    // Dropped again, and named again by a later look.
    kinds.forget('v');
    kinds.decide(kinds.lookBegins(), new Set(['v']), ['v'], keepsAll);
    expect(kinds.of('v')).toBe('view');
  });

  it('finds the first record carrying a claim or an epoch', () => {
    expect(fenceHeaderAt([])).toBe(-1);
    expect(fenceHeaderAt([record(0, undefined), record(1, [other])])).toBe(-1);
    expect(fenceHeaderAt([record(0, [other]), record(1, [other, epochHeader(3)])])).toBe(1);
    expect(fenceHeaderAt([record(0, undefined), record(1, claimHeaders(null))])).toBe(1);
  });
});
