// Proves the consumer group state machine on a fake clock: MEMBER_ID_REQUIRED then join, the
// leader's assignments reaching followers, rebalances on a newcomer, a leave and a session expiry,
// the rebalance and sync deadlines, generation checks, limits, and long-polls released on abort.
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../../shared/kafka/index.js';
import type { GroupClock } from '../../log-node/kafka/group-clock.js';
import { groupLimits, type GroupLimits } from '../../log-node/kafka/group-limits.js';
import {
  ConsumerGroup,
  type JoinRequest,
  type JoinResult,
  type SyncResult,
} from '../../log-node/kafka/group-membership.js';

/** Timers run only when the test advances time, in due order. */
class FakeClock implements GroupClock {
  private now = 1_000_000;
  private timers: { dueMs: number; seq: number; run: () => void }[] = [];
  private seq = 0;

  nowMs(): number {
    return this.now;
  }

  schedule(delayMs: number, run: () => void): () => void {
    const timer = { dueMs: this.now + delayMs, seq: this.seq++, run };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((t) => t !== timer);
    };
  }

  advance(ms: number): void {
    const until = this.now + ms;
    for (;;) {
      const due = this.timers
        .filter((t) => t.dueMs <= until)
        .sort((a, b) => a.dueMs - b.dueMs || a.seq - b.seq)[0];
      if (due === undefined) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.now = due.dueMs;
      due.run();
    }
    this.now = until;
  }

  pending(): number {
    return this.timers.length;
  }
}

const SESSION_MS = 10_000;
const REBALANCE_MS = 30_000;
const INITIAL_DELAY_MS = 3_000;

let clock: FakeClock;
let emptied: string[];
const groups: ConsumerGroup[] = [];
afterEach(() => {
  for (const group of groups.splice(0)) group.close();
});

function newGroup(limits: Partial<GroupLimits> = {}): ConsumerGroup {
  clock = new FakeClock();
  emptied = [];
  const group = new ConsumerGroup(
    'g',
    groupLimits({ initialRebalanceDelayMs: INITIAL_DELAY_MS, ...limits }),
    clock,
    (g) => emptied.push(g.groupId),
  );
  groups.push(group);
  return group;
}

function joinRequest(overrides: Partial<JoinRequest> = {}): JoinRequest {
  return {
    memberId: '',
    groupInstanceId: null,
    clientId: 'client',
    sessionTimeoutMs: SESSION_MS,
    rebalanceTimeoutMs: REBALANCE_MS,
    protocolType: 'consumer',
    protocols: [{ name: 'range', metadata: Buffer.from('m') }],
    requireKnownMemberId: true,
    signal: new AbortController().signal,
    ...overrides,
  };
}

/** A join left pending: its answer, once there, is read from `settled`. */
function pendingJoin(group: ConsumerGroup, overrides: Partial<JoinRequest>) {
  const state: { settled: JoinResult | null } = { settled: null };
  void group.join(joinRequest(overrides)).then((r) => (state.settled = r));
  return state;
}

async function flush(): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
}

/** MEMBER_ID_REQUIRED, then the join with the id handed out; returns the pending second join. */
async function newMember(group: ConsumerGroup, overrides: Partial<JoinRequest> = {}) {
  const first = await group.join(joinRequest(overrides));
  expect(first.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
  expect(first.memberId).toMatch(/^client-/);
  return {
    memberId: first.memberId,
    join: pendingJoin(group, { ...overrides, memberId: first.memberId }),
  };
}

async function syncAll(
  group: ConsumerGroup,
  generationId: number,
  leaderId: string,
  memberIds: string[],
): Promise<Map<string, SyncResult>> {
  const answers = new Map<string, SyncResult>();
  const followers = memberIds.filter((id) => id !== leaderId);
  const waits = followers.map((memberId) =>
    group
      .sync({
        memberId,
        generationId,
        protocolType: 'consumer',
        protocolName: 'range',
        assignments: [],
        signal: new AbortController().signal,
      })
      .then((r) => answers.set(memberId, r)),
  );
  const leader = await group.sync({
    memberId: leaderId,
    generationId,
    protocolType: 'consumer',
    protocolName: 'range',
    assignments: memberIds.map((memberId) => ({
      memberId,
      assignment: Buffer.from(`to ${memberId}`),
    })),
    signal: new AbortController().signal,
  });
  answers.set(leaderId, leader);
  await Promise.all(waits);
  return answers;
}

describe('ConsumerGroup', () => {
  it('hands a member id out first, completes after the initial delay, and delivers the leader assignments', async () => {
    const group = newGroup();
    const a = await newMember(group);
    const b = await newMember(group);
    await flush();
    expect(group.currentState).toBe('PreparingRebalance');
    expect(a.join.settled).toBeNull();

    // b arrived during the initial delay: Kafka waits one delay more for further newcomers.
    clock.advance(INITIAL_DELAY_MS);
    await flush();
    expect(group.currentState).toBe('PreparingRebalance');
    clock.advance(INITIAL_DELAY_MS);
    await flush();
    expect(group.currentState).toBe('CompletingRebalance');
    const [ja, jb] = [a.join.settled!, b.join.settled!];
    expect(ja.errorCode).toBe(ErrorCode.NONE);
    expect(ja.generationId).toBe(1);
    expect(jb.generationId).toBe(1);
    expect(ja.leader).toBe(a.memberId);
    expect(ja.protocolName).toBe('range');
    expect(ja.members.map((m) => m.memberId).sort()).toEqual([a.memberId, b.memberId].sort());
    expect(jb.members).toEqual([]);

    const synced = await syncAll(group, 1, a.memberId, [a.memberId, b.memberId]);
    expect(group.currentState).toBe('Stable');
    expect(synced.get(b.memberId)!.assignment.toString()).toBe(`to ${b.memberId}`);
    expect(synced.get(a.memberId)!.assignment.toString()).toBe(`to ${a.memberId}`);
    expect(group.heartbeat(b.memberId, 1)).toBe(ErrorCode.NONE);
  });

  it('rebalances when a member joins a stable group, leaves, or stops heartbeating', async () => {
    const group = newGroup();
    const a = await newMember(group);
    clock.advance(INITIAL_DELAY_MS);
    await flush();
    await syncAll(group, 1, a.memberId, [a.memberId]);

    const b = await newMember(group);
    expect(group.heartbeat(a.memberId, 1)).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    const rejoin = pendingJoin(group, { memberId: a.memberId });
    await flush();
    // Every known member rejoined: no waiting for the deadline.
    expect(rejoin.settled?.generationId).toBe(2);
    expect(b.join.settled?.generationId).toBe(2);
    expect(rejoin.settled?.leader).toBe(a.memberId);
    await syncAll(group, 2, a.memberId, [a.memberId, b.memberId]);

    expect(group.leave(a.memberId)).toBe(ErrorCode.NONE);
    expect(group.currentState).toBe('PreparingRebalance');
    expect(group.heartbeat(b.memberId, 2)).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    const alone = pendingJoin(group, { memberId: b.memberId });
    await flush();
    expect(alone.settled?.generationId).toBe(3);
    expect(alone.settled?.leader).toBe(b.memberId);
    await syncAll(group, 3, b.memberId, [b.memberId]);

    clock.advance(SESSION_MS - 1);
    expect(group.heartbeat(b.memberId, 3)).toBe(ErrorCode.NONE);
    clock.advance(SESSION_MS);
    expect(group.heartbeat(b.memberId, 3)).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    expect(group.currentState).toBe('Empty');
    expect(emptied).toEqual(['g']);
    expect(clock.pending()).toBe(0);
  });

  it('completes a rebalance at its deadline without the members that did not rejoin', async () => {
    const group = newGroup();
    const a = await newMember(group);
    const b = await newMember(group);
    clock.advance(2 * INITIAL_DELAY_MS);
    await flush();
    await syncAll(group, 1, a.memberId, [a.memberId, b.memberId]);

    const c = await newMember(group);
    const aRejoin = pendingJoin(group, { memberId: a.memberId });
    // b keeps heartbeating (REBALANCE_IN_PROGRESS) within its session but never rejoins.
    const stepMs = SESSION_MS / 2;
    for (let elapsedMs = stepMs; elapsedMs < REBALANCE_MS; elapsedMs += stepMs) {
      clock.advance(stepMs);
      expect(group.heartbeat(b.memberId, 1)).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    }
    clock.advance(stepMs - 1);
    await flush();
    expect(aRejoin.settled).toBeNull();
    clock.advance(1);
    await flush();
    expect(aRejoin.settled?.generationId).toBe(2);
    expect(aRejoin.settled?.members.map((m) => m.memberId).sort()).toEqual(
      [a.memberId, c.memberId].sort(),
    );
    expect(group.heartbeat(b.memberId, 2)).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  it('leaves a stable group alone when an id handed out with MEMBER_ID_REQUIRED expires or leaves unused', async () => {
    const group = newGroup();
    const a = await newMember(group);
    clock.advance(INITIAL_DELAY_MS);
    await flush();
    await syncAll(group, 1, a.memberId, [a.memberId]);

    // A newcomer is handed an id and never joins with it; a keeps heartbeating past its expiry.
    const abandoned = await group.join(joinRequest());
    expect(abandoned.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
    const stepMs = SESSION_MS / 4;
    for (let elapsedMs = 0; elapsedMs <= 3 * SESSION_MS; elapsedMs += stepMs) {
      clock.advance(stepMs);
      expect(group.heartbeat(a.memberId, 1)).toBe(ErrorCode.NONE);
    }
    expect(group.size).toBe(1);
    expect(group.currentState).toBe('Stable');
    expect(group.generationId).toBe(1);

    // One that leaves before joining (LeaveGroup with the id handed out) changes nothing either.
    const leaving = await group.join(joinRequest());
    expect(group.leave(leaving.memberId)).toBe(ErrorCode.NONE);
    expect(group.heartbeat(a.memberId, 1)).toBe(ErrorCode.NONE);
    expect(group.currentState).toBe('Stable');
    expect(group.size).toBe(1);
  });

  it('completes a rebalance waiting on an id handed out once that id expires unused', async () => {
    const group = newGroup();
    const a = await newMember(group);
    clock.advance(INITIAL_DELAY_MS);
    await flush();
    await syncAll(group, 1, a.memberId, [a.memberId]);

    const abandoned = await group.join(joinRequest());
    expect(abandoned.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
    // a rejoins with new metadata: a rebalance that waits for the id handed out to join.
    const rejoin = pendingJoin(group, {
      memberId: a.memberId,
      protocols: [{ name: 'range', metadata: Buffer.from('new') }],
    });
    await flush();
    expect(group.currentState).toBe('PreparingRebalance');
    expect(rejoin.settled).toBeNull();
    clock.advance(SESSION_MS);
    await flush();
    expect(rejoin.settled?.generationId).toBe(2);
    expect(rejoin.settled?.members.map((m) => m.memberId)).toEqual([a.memberId]);
  });

  it('answers waiting followers REBALANCE_IN_PROGRESS when the leader never syncs', async () => {
    const group = newGroup();
    const a = await newMember(group);
    const b = await newMember(group);
    clock.advance(2 * INITIAL_DELAY_MS);
    await flush();
    let followerSync: SyncResult | null = null;
    void group
      .sync({
        memberId: b.memberId,
        generationId: 1,
        protocolType: null,
        protocolName: null,
        assignments: [],
        signal: new AbortController().signal,
      })
      .then((r) => (followerSync = r));
    // The leader heartbeats (it is alive) but never sends its assignments.
    const stepMs = SESSION_MS / 2;
    for (let elapsedMs = stepMs; elapsedMs < REBALANCE_MS; elapsedMs += stepMs) {
      clock.advance(stepMs);
      expect(group.heartbeat(a.memberId, 1)).toBe(ErrorCode.NONE);
    }
    await flush();
    expect(followerSync).toBeNull();
    clock.advance(stepMs);
    await flush();
    expect(followerSync!.errorCode).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    expect(group.heartbeat(a.memberId, 1)).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    const rejoin = pendingJoin(group, { memberId: b.memberId });
    await flush();
    expect(rejoin.settled?.generationId).toBe(2);
    expect(rejoin.settled?.leader).toBe(b.memberId);
  });

  it('checks generations and members on heartbeat, sync and commit', async () => {
    const group = newGroup();
    expect(group.checkCommit('', -1)).toBe(ErrorCode.NONE);
    const a = await newMember(group);
    clock.advance(INITIAL_DELAY_MS);
    await flush();
    expect(group.checkCommit(a.memberId, 1)).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    await syncAll(group, 1, a.memberId, [a.memberId]);

    expect(group.heartbeat(a.memberId, 0)).toBe(ErrorCode.ILLEGAL_GENERATION);
    expect(group.heartbeat('someone-else', 1)).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    expect(group.checkCommit(a.memberId, 1)).toBe(ErrorCode.NONE);
    expect(group.checkCommit(a.memberId, 7)).toBe(ErrorCode.ILLEGAL_GENERATION);
    expect(group.checkCommit('', -1)).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    const stale = await group.sync({
      memberId: a.memberId,
      generationId: 0,
      protocolType: null,
      protocolName: null,
      assignments: [],
      signal: new AbortController().signal,
    });
    expect(stale.errorCode).toBe(ErrorCode.ILLEGAL_GENERATION);
    const otherProtocol = await group.sync({
      memberId: a.memberId,
      generationId: 1,
      protocolType: 'consumer',
      protocolName: 'roundrobin',
      assignments: [],
      signal: new AbortController().signal,
    });
    expect(otherProtocol.errorCode).toBe(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
    expect(group.leave('nobody')).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  it('enforces session bounds, group size, protocols, and refuses static membership', async () => {
    const group = newGroup({
      groupMembersMax: 2,
      sessionTimeoutMsMin: 6_000,
      sessionTimeoutMsMax: 60_000,
    });
    const tooShort = await group.join(joinRequest({ sessionTimeoutMs: 5_999 }));
    expect(tooShort.errorCode).toBe(ErrorCode.INVALID_SESSION_TIMEOUT);
    const tooLong = await group.join(joinRequest({ sessionTimeoutMs: 60_001 }));
    expect(tooLong.errorCode).toBe(ErrorCode.INVALID_SESSION_TIMEOUT);
    const staticMember = await group.join(joinRequest({ groupInstanceId: 'instance-1' }));
    expect(staticMember.errorCode).toBe(ErrorCode.INVALID_REQUEST);
    const noProtocols = await group.join(joinRequest({ protocols: [] }));
    expect(noProtocols.errorCode).toBe(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);

    await newMember(group);
    const other = await group.join(
      joinRequest({ protocols: [{ name: 'roundrobin', metadata: Buffer.alloc(0) }] }),
    );
    expect(other.errorCode).toBe(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
    const otherType = await group.join(joinRequest({ protocolType: 'connect' }));
    expect(otherType.errorCode).toBe(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);

    // One id handed out and not yet used counts toward the bound.
    const second = await group.join(joinRequest());
    expect(second.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED);
    const third = await group.join(joinRequest());
    expect(third.errorCode).toBe(ErrorCode.GROUP_MAX_SIZE_REACHED);
    // An id handed out but never used expires with its session.
    clock.advance(SESSION_MS);
    await flush();
    expect(group.size).toBe(1);
  });

  it('joins old clients (JoinGroup before v4) at once, and releases a join whose connection closed', async () => {
    const group = newGroup();
    const connection = new AbortController();
    const join = pendingJoin(group, { requireKnownMemberId: false, signal: connection.signal });
    await flush();
    expect(join.settled).toBeNull();
    connection.abort();
    await flush();
    expect(join.settled?.errorCode).toBe(ErrorCode.REBALANCE_IN_PROGRESS);
    const memberId = join.settled!.memberId;
    expect(memberId).toMatch(/^client-/);
    // It did not rejoin: the rebalance completes without it and the group is empty again.
    clock.advance(INITIAL_DELAY_MS);
    await flush();
    expect(group.currentState).toBe('Empty');
    expect(emptied).toEqual(['g']);
    expect(group.heartbeat(memberId, 1)).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
  });

  it('answers every waiter when closed', async () => {
    const group = newGroup();
    const a = await newMember(group);
    await flush();
    group.close();
    await flush();
    expect(a.join.settled?.errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect(group.currentState).toBe('Dead');
    expect(group.heartbeat(a.memberId, 1)).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    expect(clock.pending()).toBe(0);
  });
});
