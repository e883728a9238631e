// Proves the rule that fences a view's old writers (shared/view-epoch.ts) and how views' tasks
// are dealt (views/task-assignment.ts): a record of an epoch below the greatest seen before it
// in its partition is skipped, claims change no document, a record without an epoch passes in a
// collection's partition and is skipped in a view's, a collection's topic is never fenced whatever
// headers its records carry, a topic of unknown kind is held at its first fence header until its
// kind is known, the rule picks up after a checkpoint from
// the greatest epoch kept there and gives the same records as a run over the whole log; the
// assignment is the same whatever order the members come in, deals every task once, leaves a
// task with the member that runs it while that member holds no more than its share, and deals
// one no member runs to a member that kept its state; an owner reading its topic back is given
// the keys of fenced records and stops at a claim above its own, finding fenced exactly what a
// serve-node leaves out of a random log, from any offset.
import { describe, expect, it } from 'vitest';
import type { StoredRecord } from '../../shared/batch-codec.js';
import { claimHeaders, claimKey, epochHeader, fenceRecords } from '../../shared/view-epoch.js';
import { partitionFor } from '../../shared/partitioner.js';
import { seededRandom, testSeed } from '../harness/random.js';
import { fenceViewRecords } from '../../serve-node/view-fence.js';
import { watchRecords } from '../../views/fence-watch.js';
import {
  assignTasks,
  decodeMember,
  decodeTasks,
  encodeMember,
  encodeTasks,
} from '../../views/task-assignment.js';

const out = (offset: number, key: string, epoch: number | null): StoredRecord => ({
  offset,
  key,
  value: new TextEncoder().encode('{}'),
  timestampMs: 0,
  ...(epoch === null ? {} : { headers: [epochHeader(epoch)] }),
});
const claim = (offset: number, epoch: number | null): StoredRecord => ({
  offset,
  key: 'claim',
  value: null,
  timestampMs: 0,
  headers: claimHeaders(epoch),
});

describe('view fencing', () => {
  const log = [
    claim(0, null), // epoch 0: partition 0's claim is its own offset
    out(1, 'a', 0),
    claim(2, null), // epoch 2: a new owner
    out(3, 'a', 0), // the old owner, late
    out(4, 'b', 2),
    out(5, 'c', null), // no epoch: not the processor's
    out(6, 'a', 2),
  ];

  it('skips what an older epoch wrote after a newer claim, and claims themselves', () => {
    const { kept, epochAfter } = fenceRecords(log, -1);
    expect(kept.map((r) => r.offset)).toEqual([1, 4, 6]);
    expect(epochAfter).toBe(2);
  });

  it('lets a collection through whole', () => {
    const records = [out(0, 'a', null), out(1, 'b', null)];
    expect(fenceRecords(records, -1)).toEqual({ kept: records, epochAfter: -1 });
  });

  it('resumes from a checkpoint as if it had run all along', () => {
    const whole = fenceViewRecords(log, -1);
    for (let cut = 0; cut <= log.length; cut++) {
      const before = fenceViewRecords(log.slice(0, cut), -1);
      const after = fenceViewRecords(log.slice(cut), before.epochBefore(cut));
      expect([...before.kept, ...after.kept]).toEqual(whole.kept);
      expect(after.epochBefore(log.length)).toBe(whole.epochBefore(log.length));
    }
  });

  it("answers the epoch before every offset as fenceRecords does, a collection's records as they are", () => {
    const fenced = fenceViewRecords(log, -1);
    expect(fenced.kept).toEqual(fenceRecords(log, -1).kept);
    for (let cut = 0; cut <= log.length; cut++) {
      expect(fenced.epochBefore(cut)).toBe(fenceRecords(log.slice(0, cut), -1).epochAfter);
    }
    const records = [out(0, 'a', null), out(1, 'b', null)];
    const collection = fenceViewRecords(records, -1);
    expect(collection.kept).toBe(records);
    expect(collection.epochBefore(2)).toBe(-1);
  });

  it("gives its owner the keys of fenced records, and stops at a claim above the owner's", () => {
    // The owner of epoch 2 reads its topic back from its claim: a's late record is fenced.
    expect(watchRecords(log, 2, -1, 2)).toEqual({
      fenced: ['a', 'c'],
      epochAfter: 2,
      next: 7,
      deposedAt: null,
    });
    // From the start, as a resumed owner of an older state reads: the same records are fenced.
    expect(watchRecords(log, 0, -1, 2).fenced).toEqual(['a', 'c']);
    // The owner of epoch 0 is deposed at the claim of epoch 2, which is read again next time.
    expect(watchRecords(log, 0, -1, 0)).toEqual({
      fenced: [],
      epochAfter: 0,
      next: 2,
      deposedAt: 2,
    });
  });

  it('reads back as fenced the records a serve-node skips, up to a claim above its own', () => {
    const random = seededRandom(testSeed('view fencing read-back'));
    for (let round = 0; round < 200; round++) {
      // Claims in partition 0 carry no epoch (their offset is theirs); owners write their own
      // epochs, sleepers older ones, strangers none.
      const log: StoredRecord[] = [];
      const epochs: number[] = [];
      for (let offset = 0; offset < 30; offset++) {
        const kind = random.int(0, 5);
        if (kind === 0 || epochs.length === 0) {
          log.push(claim(offset, null));
          epochs.push(offset);
        } else if (kind === 5) log.push(out(offset, `k${random.int(0, 4)}`, null));
        else log.push(out(offset, `k${random.int(0, 4)}`, random.pick(epochs)));
      }
      const from = random.int(0, log.length);
      const ownEpoch = random.pick(epochs);
      const replica = fenceViewRecords(log, -1);
      const read = watchRecords(log, from, replica.epochBefore(from), ownEpoch);
      const deposedAt = log.find(
        (r) => r.offset >= from && r.key === 'claim' && r.offset > ownEpoch,
      );
      expect(read.deposedAt).toBe(deposedAt?.offset ?? null);
      expect(read.next).toBe(deposedAt?.offset ?? Math.max(from, log.length));
      const applied = new Set(replica.kept);
      const skipped = log.filter(
        (r) => r.offset >= from && r.offset < read.next && r.key !== 'claim' && !applied.has(r),
      );
      expect(read.fenced).toEqual([...new Set(skipped.map((r) => r.key))]);
      expect(read.epochAfter).toBe(replica.epochBefore(read.next));
    }
  });

  it("applies a collection's records whatever headers they carry", () => {
    const forged = [out(0, 'a', 1_000_000), claim(1, null), out(2, 'b', null), out(3, 'c', 0)];
    const fenced = fenceViewRecords(forged, -1, 'collection');
    expect(fenced.kept).toBe(forged);
    expect(fenced.epochBefore(4)).toBe(-1);
    expect(fenced.holdAt).toBeUndefined();
  });

  it('holds a topic of unknown kind at its first fence header, or at once when it kept an epoch', () => {
    const records = [out(0, 'a', null), out(1, 'b', null), claim(2, null), out(3, 'c', 2)];
    const unknown = fenceViewRecords(records, -1, 'unknown');
    expect(unknown.kept.map((r) => r.offset)).toEqual([0, 1]);
    expect(unknown.holdAt).toBe(2);
    // Asked, and found to be a view's: the rule then runs from where it held, as if all along.
    const after = fenceViewRecords(records.slice(2), unknown.epochBefore(2), 'view');
    expect([...unknown.kept, ...after.kept]).toEqual(fenceViewRecords(records, -1).kept);
    const headerless = [out(0, 'a', null)];
    expect(fenceViewRecords(headerless, -1, 'unknown')).toMatchObject({ kept: headerless });
    expect(fenceViewRecords(headerless, -1, 'unknown').holdAt).toBeUndefined();
    const resumed = fenceViewRecords([out(7, 'x', null)], 4, 'unknown');
    expect(resumed.kept).toEqual([]);
    expect(resumed.holdAt).toBe(7);
  });

  it('claims with a key the default partitioner places in their partition', () => {
    for (let p = 0; p < 8; p++) expect(partitionFor(claimKey(p, 8), 8)).toBe(p);
  });
});

describe('view task assignment', () => {
  it('deals sorted tasks round-robin over sorted members, whatever order they come in', () => {
    const members = [
      { memberId: 'm-b', tasks: ['v@3', 'u@0'], owned: [] },
      { memberId: 'm-a', tasks: ['w@7', 'u@0'], owned: [] },
    ];
    const dealt = assignTasks(members);
    expect(Object.fromEntries(dealt)).toEqual({ 'm-a': ['u@0', 'w@7'], 'm-b': ['v@3'] });
    expect(assignTasks([...members].reverse())).toEqual(dealt);
  });

  it('leaves tasks where they run when a view is declared, and moves only past a share', () => {
    const tasks = ['a@0', 'b@1', 'c@2'];
    // Running b and c (one each), a view `a@0` sorting first is declared: neither moves (dealt
    // round-robin anew, b would go to m-b and c to m-a, and both be rebuilt).
    const dealt = assignTasks([
      { memberId: 'm-a', tasks, owned: ['b@1'] },
      { memberId: 'm-b', tasks, owned: ['c@2'] },
    ]);
    expect(Object.fromEntries(dealt)).toEqual({ 'm-a': ['a@0', 'b@1'], 'm-b': ['c@2'] });
    // A member that ran everything keeps its share; a newcomer gets the rest.
    const joined = assignTasks([
      { memberId: 'm-a', tasks, owned: tasks },
      { memberId: 'm-c', tasks, owned: [] },
    ]);
    expect(Object.fromEntries(joined)).toEqual({ 'm-a': ['a@0', 'b@1'], 'm-c': ['c@2'] });
  });

  it('deals a task no member runs to a member that holds its state, within its share', () => {
    const tasks = ['a@0', 'b@1'];
    // A member restarted after kill -9 runs nothing but kept the state of a@0; round-robin
    // alone would give a@0 to m-a, which would rebuild it from the source's start.
    const dealt = assignTasks([
      { memberId: 'm-a', tasks, owned: [] },
      { memberId: 'm-b', tasks, owned: [], held: ['a@0'] },
    ]);
    expect(Object.fromEntries(dealt)).toEqual({ 'm-a': ['b@1'], 'm-b': ['a@0'] });
    // The member that runs a task keeps it; a holder gets no more than its share.
    const running = assignTasks([
      { memberId: 'm-a', tasks, owned: ['a@0'] },
      { memberId: 'm-b', tasks, owned: [], held: tasks },
    ]);
    expect(Object.fromEntries(running)).toEqual({ 'm-a': ['a@0'], 'm-b': ['b@1'] });
    const crowded = assignTasks([
      { memberId: 'm-a', tasks, owned: [] },
      { memberId: 'm-b', tasks, owned: [], held: tasks },
    ]);
    expect(Object.fromEntries(crowded)).toEqual({ 'm-a': ['b@1'], 'm-b': ['a@0'] });
  });

  it('reads back what it encodes, and nothing from bytes of another protocol', () => {
    expect(decodeTasks(encodeTasks(['b@1', 'a@0']))).toEqual(['a@0', 'b@1']);
    expect(decodeTasks(Buffer.from([0, 1, 2]))).toEqual([]);
    expect(decodeMember(encodeMember(['b@1', 'a@0'], ['b@1'], ['a@0']))).toEqual({
      tasks: ['a@0', 'b@1'],
      owned: ['b@1'],
      held: ['a@0'],
    });
    expect(decodeMember(Buffer.from('[1]'))).toEqual({ tasks: [], owned: [], held: [] });
  });
});
