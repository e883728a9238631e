/**
 * One consumer group's membership: Kafka's classic group protocol as its clients expect it
 * (kafkajs, librdkafka, @platformatic/kafka), after Kafka's GroupCoordinator and GroupMetadata.
 *
 *   Empty ──join──▶ PreparingRebalance ──all known members rejoined, or the rebalance timeout──▶
 *   CompletingRebalance (the leader has the members' metadata) ──leader's SyncGroup──▶ Stable
 *   Stable ──a join with new metadata, a leave, a session expiry──▶ PreparingRebalance
 *   any ──the coordinator closes──▶ Dead
 *
 * Each completed rebalance is a new generation. A JoinGroup answers when its rebalance completes
 * and a follower's SyncGroup when the leader's assignments arrive: both are long-polls, bounded by
 * the rebalance timeout (at most `rebalanceTimeoutMsMax`) and released when their connection
 * closes. A member whose session passes without a heartbeat (or join, sync or commit) is removed,
 * which starts a rebalance; a member waiting in a join or sync is kept alive meanwhile, the
 * rebalance's own deadline bounding that wait. An id handed out with MEMBER_ID_REQUIRED and never
 * used expires with its session without starting one: it only holds up a rebalance under way.
 *
 * Membership is not durable: after a restart members get UNKNOWN_MEMBER_ID (their commits
 * ILLEGAL_GENERATION) and rejoin (as after a coordinator move in Kafka); committed offsets are
 * what survives (group-offset-store.ts). A group that empties is forgotten but for its generation,
 * which the group joined again under its id goes on from (Kafka keeps an empty group that has
 * offsets), so within a run of the coordinator a generation names one deal.
 * Static membership (KIP-345, a groupInstanceId) is refused with INVALID_REQUEST.
 */
import { randomUUID } from 'node:crypto';
import { ErrorCode } from '../../shared/kafka/index.js';
import { assert } from '../../shared/assert.js';
import type { GroupClock } from './group-clock.js';
import type { GroupLimits } from './group-limits.js';

export type GroupState = 'Empty' | 'PreparingRebalance' | 'CompletingRebalance' | 'Stable' | 'Dead';

export interface GroupProtocol {
  name: string;
  metadata: Buffer;
}

export interface JoinRequest {
  /** '' for a member joining for the first time. */
  memberId: string;
  groupInstanceId: string | null;
  clientId: string;
  sessionTimeoutMs: number;
  /** −1: the session timeout (JoinGroup v0 had none). */
  rebalanceTimeoutMs: number;
  protocolType: string;
  protocols: readonly GroupProtocol[];
  /** JoinGroup v4+ (KIP-394): a new member first gets its id with MEMBER_ID_REQUIRED and rejoins. */
  requireKnownMemberId: boolean;
  signal: AbortSignal;
}

export interface JoinMember {
  memberId: string;
  groupInstanceId: string | null;
  metadata: Buffer;
}

export interface JoinResult {
  errorCode: number;
  generationId: number;
  protocolType: string | null;
  /** '' on an error: JoinGroup before v7 has no null here. */
  protocolName: string;
  leader: string;
  memberId: string;
  /** The leader's answer lists every member with its metadata; followers' is empty. */
  members: JoinMember[];
}

export interface SyncRequest {
  memberId: string;
  generationId: number;
  /** Null when the client's version does not send it. */
  protocolType: string | null;
  protocolName: string | null;
  assignments: readonly { memberId: string; assignment: Buffer }[];
  signal: AbortSignal;
}

export interface SyncResult {
  errorCode: number;
  protocolType: string | null;
  protocolName: string | null;
  assignment: Buffer;
}

const NO_ASSIGNMENT = Buffer.alloc(0);

/** A long-poll's answer to come: settled once, by the group or by its connection closing. */
class Waiter<T> {
  readonly answer: Promise<T>;
  private settle!: (value: T) => void;
  private settled = false;
  private readonly onAbort: () => void;

  constructor(
    private readonly signal: AbortSignal,
    abandoned: () => T,
  ) {
    this.answer = new Promise((resolve) => (this.settle = resolve));
    this.onAbort = () => this.resolve(abandoned());
    signal.addEventListener('abort', this.onAbort, { once: true });
    if (signal.aborted) this.onAbort();
  }

  resolve(value: T): void {
    if (this.settled) return;
    this.settled = true;
    this.signal.removeEventListener('abort', this.onAbort);
    this.settle(value);
  }
}

interface Member {
  readonly memberId: string;
  sessionTimeoutMs: number;
  rebalanceTimeoutMs: number;
  protocols: readonly GroupProtocol[];
  assignment: Buffer;
  awaitingJoin: Waiter<JoinResult> | null;
  awaitingSync: Waiter<SyncResult> | null;
  cancelSession: () => void;
}

/** A rebalance under way: its timer, and the deadline by which known members must rejoin. */
interface Rebalance {
  cancel: () => void;
  deadlineMs: number;
  /** The first rebalance of an empty group waits `initialRebalanceDelayMs` for more members. */
  initial: boolean;
  newMemberJoined: boolean;
}

export class ConsumerGroup {
  private state: GroupState = 'Empty';
  private generation: number;
  private protocolType: string | null = null;
  private protocolName: string | null = null;
  private leaderId: string | null = null;
  private readonly members = new Map<string, Member>();
  /** Ids handed out with MEMBER_ID_REQUIRED whose owners have not rejoined yet: their session timers. */
  private readonly pending = new Map<string, () => void>();
  private rebalance: Rebalance | null = null;
  private cancelSyncDeadline: (() => void) | null = null;

  constructor(
    readonly groupId: string,
    private readonly limits: GroupLimits,
    private readonly clock: GroupClock,
    /** Called when the group has no members left, so its coordinator can forget it. */
    private readonly onEmpty: (group: ConsumerGroup) => void,
    /** The generation it had when its coordinator last forgot it empty: the next is above. */
    generation = 0,
  ) {
    this.generation = generation;
  }

  get currentState(): GroupState {
    return this.state;
  }

  get generationId(): number {
    return this.generation;
  }

  get size(): number {
    return this.members.size + this.pending.size;
  }

  join(request: JoinRequest): Promise<JoinResult> {
    const refused = this.refuseJoin(request);
    if (refused !== ErrorCode.NONE)
      return Promise.resolve(this.joinError(refused, request.memberId));
    if (request.memberId === '') return this.joinNewMember(request);
    const pendingSession = this.pending.get(request.memberId);
    if (pendingSession !== undefined) {
      pendingSession();
      this.pending.delete(request.memberId);
      return this.addMemberAndRebalance(request.memberId, request);
    }
    const member = this.members.get(request.memberId);
    if (member === undefined) {
      return Promise.resolve(this.joinError(ErrorCode.UNKNOWN_MEMBER_ID, request.memberId));
    }
    return this.joinKnownMember(member, request);
  }

  sync(request: SyncRequest): Promise<SyncResult> {
    const member = this.members.get(request.memberId);
    const failed = (errorCode: number) =>
      Promise.resolve(this.syncResult(errorCode, NO_ASSIGNMENT));
    if (this.state === 'Dead') return failed(ErrorCode.COORDINATOR_NOT_AVAILABLE);
    if (member === undefined) return failed(ErrorCode.UNKNOWN_MEMBER_ID);
    if (request.generationId !== this.generation) return failed(ErrorCode.ILLEGAL_GENERATION);
    if (
      (request.protocolType !== null && request.protocolType !== this.protocolType) ||
      (request.protocolName !== null && request.protocolName !== this.protocolName)
    ) {
      return failed(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
    }
    if (this.state === 'PreparingRebalance') return failed(ErrorCode.REBALANCE_IN_PROGRESS);
    this.renewSession(member);
    if (this.state === 'Stable') return Promise.resolve(this.assignmentOf(member));
    assert(this.state === 'CompletingRebalance', `sync in state ${this.state}`);
    member.awaitingSync?.resolve(this.syncResult(ErrorCode.REBALANCE_IN_PROGRESS, NO_ASSIGNMENT));
    const waiter = new Waiter<SyncResult>(request.signal, () => {
      if (member.awaitingSync === waiter) member.awaitingSync = null;
      return this.syncResult(ErrorCode.REBALANCE_IN_PROGRESS, NO_ASSIGNMENT);
    });
    member.awaitingSync = waiter;
    if (member.memberId === this.leaderId) this.completeSync(request.assignments);
    return waiter.answer;
  }

  heartbeat(memberId: string, generationId: number): number {
    if (this.state === 'Dead') return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    const member = this.members.get(memberId);
    if (member === undefined) return ErrorCode.UNKNOWN_MEMBER_ID;
    if (generationId !== this.generation) return ErrorCode.ILLEGAL_GENERATION;
    this.renewSession(member);
    return this.state === 'PreparingRebalance' ? ErrorCode.REBALANCE_IN_PROGRESS : ErrorCode.NONE;
  }

  leave(memberId: string): number {
    if (this.state === 'Dead') return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    const pendingSession = this.pending.get(memberId);
    if (pendingSession !== undefined) {
      pendingSession();
      this.pending.delete(memberId);
      this.afterPendingMemberRemoved();
      return ErrorCode.NONE;
    }
    const member = this.members.get(memberId);
    if (member === undefined) return ErrorCode.UNKNOWN_MEMBER_ID;
    this.removeMember(member);
    this.afterMemberRemoved();
    return ErrorCode.NONE;
  }

  /**
   * Whether a member may commit offsets now (a commit also counts as a heartbeat). Generation −1
   * is a client managing its own partitions (a simple consumer, kcat without -G): accepted while
   * the group has no members, as Kafka does.
   */
  checkCommit(memberId: string, generationId: number): number {
    if (this.state === 'Dead') return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    if (generationId < 0 && this.members.size === 0) return ErrorCode.NONE;
    const member = this.members.get(memberId);
    if (member === undefined) return ErrorCode.UNKNOWN_MEMBER_ID;
    if (generationId !== this.generation) return ErrorCode.ILLEGAL_GENERATION;
    if (this.state === 'CompletingRebalance') return ErrorCode.REBALANCE_IN_PROGRESS;
    this.renewSession(member);
    return ErrorCode.NONE;
  }

  /** The coordinator is closing: every waiter is answered and every timer cancelled. */
  close(): void {
    this.state = 'Dead';
    this.rebalance?.cancel();
    this.rebalance = null;
    this.cancelSyncDeadline?.();
    this.cancelSyncDeadline = null;
    for (const cancel of this.pending.values()) cancel();
    this.pending.clear();
    for (const member of [...this.members.values()]) {
      this.removeMember(member, ErrorCode.COORDINATOR_NOT_AVAILABLE);
    }
  }

  private refuseJoin(request: JoinRequest): number {
    if (this.state === 'Dead') return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    if (request.groupInstanceId !== null) return ErrorCode.INVALID_REQUEST;
    const { sessionTimeoutMsMin, sessionTimeoutMsMax } = this.limits;
    if (
      request.sessionTimeoutMs < sessionTimeoutMsMin ||
      request.sessionTimeoutMs > sessionTimeoutMsMax
    ) {
      return ErrorCode.INVALID_SESSION_TIMEOUT;
    }
    if (!this.supportsProtocols(request.protocolType, request.protocols)) {
      return ErrorCode.INCONSISTENT_GROUP_PROTOCOL;
    }
    return ErrorCode.NONE;
  }

  /** A join must name a protocol type and protocols, the group's type, and one every member has. */
  private supportsProtocols(protocolType: string, protocols: readonly GroupProtocol[]): boolean {
    if (protocolType === '' || protocols.length === 0) return false;
    if (this.members.size === 0) return true;
    if (protocolType !== this.protocolType) return false;
    return protocols.some(({ name }) =>
      [...this.members.values()].every((m) => m.protocols.some((p) => p.name === name)),
    );
  }

  private joinNewMember(request: JoinRequest): Promise<JoinResult> {
    if (this.size >= this.limits.groupMembersMax) {
      return Promise.resolve(this.joinError(ErrorCode.GROUP_MAX_SIZE_REACHED, ''));
    }
    const memberId = `${request.clientId}-${randomUUID()}`;
    if (!request.requireKnownMemberId) return this.addMemberAndRebalance(memberId, request);
    this.pending.set(
      memberId,
      this.clock.schedule(request.sessionTimeoutMs, () => {
        this.pending.delete(memberId);
        this.afterPendingMemberRemoved();
      }),
    );
    return Promise.resolve(this.joinError(ErrorCode.MEMBER_ID_REQUIRED, memberId));
  }

  private addMemberAndRebalance(memberId: string, request: JoinRequest): Promise<JoinResult> {
    if (this.members.size === 0) this.protocolType = request.protocolType;
    const member: Member = {
      memberId,
      sessionTimeoutMs: request.sessionTimeoutMs,
      rebalanceTimeoutMs: rebalanceTimeoutOf(request),
      protocols: request.protocols,
      assignment: NO_ASSIGNMENT,
      awaitingJoin: null,
      awaitingSync: null,
      cancelSession: () => {},
    };
    this.members.set(memberId, member);
    this.renewSession(member);
    if (this.rebalance !== null) this.rebalance.newMemberJoined = true;
    if (this.state !== 'PreparingRebalance') this.prepareRebalance();
    return this.awaitJoin(member, request.signal);
  }

  private joinKnownMember(member: Member, request: JoinRequest): Promise<JoinResult> {
    const sameProtocols = sameProtocolsAs(member.protocols, request.protocols);
    this.updateMember(member, request);
    switch (this.state) {
      case 'PreparingRebalance':
        return this.awaitJoin(member, request.signal);
      case 'CompletingRebalance':
        // A retry of a join already answered: the same answer again, no new rebalance.
        if (sameProtocols) return Promise.resolve(this.joinResult(member));
        break;
      case 'Stable':
        if (sameProtocols && member.memberId !== this.leaderId) {
          return Promise.resolve(this.joinResult(member));
        }
        break;
      default:
        return Promise.resolve(this.joinError(ErrorCode.UNKNOWN_MEMBER_ID, member.memberId));
    }
    this.prepareRebalance();
    return this.awaitJoin(member, request.signal);
  }

  private updateMember(member: Member, request: JoinRequest): void {
    member.sessionTimeoutMs = request.sessionTimeoutMs;
    member.rebalanceTimeoutMs = rebalanceTimeoutOf(request);
    member.protocols = request.protocols;
    this.renewSession(member);
  }

  private awaitJoin(member: Member, signal: AbortSignal): Promise<JoinResult> {
    member.awaitingJoin?.resolve(this.joinError(ErrorCode.REBALANCE_IN_PROGRESS, member.memberId));
    const waiter = new Waiter<JoinResult>(signal, () => {
      // Not rejoined after all: the rebalance completes without it unless it joins again.
      if (member.awaitingJoin === waiter) member.awaitingJoin = null;
      return this.joinError(ErrorCode.REBALANCE_IN_PROGRESS, member.memberId);
    });
    member.awaitingJoin = waiter;
    this.maybeCompleteJoin();
    return waiter.answer;
  }

  /**
   * Every member must rejoin: a rebalance that interrupts a sync answers the sync's waiters
   * REBALANCE_IN_PROGRESS and drops assignments not yet delivered.
   */
  private prepareRebalance(): void {
    if (this.state === 'CompletingRebalance') {
      this.cancelSyncDeadline?.();
      this.cancelSyncDeadline = null;
      for (const member of this.members.values()) {
        member.assignment = NO_ASSIGNMENT;
        if (member.awaitingSync === null) continue;
        member.awaitingSync.resolve(
          this.syncResult(ErrorCode.REBALANCE_IN_PROGRESS, NO_ASSIGNMENT),
        );
        member.awaitingSync = null;
        // Answered now: its session runs from here, not from the last keep-alive while it waited.
        this.renewSession(member);
      }
    }
    const initial = this.state === 'Empty';
    this.state = 'PreparingRebalance';
    const timeoutMs = Math.min(
      this.limits.rebalanceTimeoutMsMax,
      Math.max(0, ...[...this.members.values()].map((m) => m.rebalanceTimeoutMs)),
    );
    const deadlineMs = this.clock.nowMs() + timeoutMs;
    const delayMs = initial ? Math.min(this.limits.initialRebalanceDelayMs, timeoutMs) : timeoutMs;
    this.rebalance = {
      deadlineMs,
      initial,
      newMemberJoined: false,
      cancel: this.clock.schedule(delayMs, () => this.onRebalanceTimer()),
    };
  }

  /** Kafka's InitialDelayedJoin: while newcomers keep arriving, wait once more, up to the deadline. */
  private onRebalanceTimer(): void {
    const rebalance = this.rebalance;
    if (rebalance === null) return;
    const remainingMs = rebalance.deadlineMs - this.clock.nowMs();
    if (rebalance.initial && rebalance.newMemberJoined && remainingMs > 0) {
      rebalance.newMemberJoined = false;
      rebalance.cancel = this.clock.schedule(
        Math.min(this.limits.initialRebalanceDelayMs, remainingMs),
        () => this.onRebalanceTimer(),
      );
      return;
    }
    this.completeJoin();
  }

  private maybeCompleteJoin(): void {
    if (this.state !== 'PreparingRebalance' || this.rebalance?.initial) return;
    if (this.pending.size > 0) return;
    for (const member of this.members.values()) if (member.awaitingJoin === null) return;
    this.completeJoin();
  }

  /** The rebalance ends: members that did not rejoin are out, and a new generation begins. */
  private completeJoin(): void {
    assert(this.state === 'PreparingRebalance', `completing a join in state ${this.state}`);
    this.rebalance?.cancel();
    this.rebalance = null;
    for (const member of [...this.members.values()]) {
      if (member.awaitingJoin === null) this.removeMember(member);
    }
    this.generation += 1;
    if (this.members.size === 0) {
      this.state = 'Empty';
      this.protocolType = null;
      this.protocolName = null;
      this.leaderId = null;
      if (this.pending.size === 0) this.onEmpty(this);
      return;
    }
    this.protocolName = this.selectProtocol();
    if (this.leaderId === null || !this.members.has(this.leaderId)) {
      this.leaderId = this.members.keys().next().value!;
    }
    this.state = 'CompletingRebalance';
    const timeoutMs = Math.min(
      this.limits.rebalanceTimeoutMsMax,
      Math.max(...[...this.members.values()].map((m) => m.rebalanceTimeoutMs)),
    );
    const generation = this.generation;
    this.cancelSyncDeadline = this.clock.schedule(timeoutMs, () => this.onSyncDeadline(generation));
    for (const member of this.members.values()) {
      const waiter = member.awaitingJoin!;
      member.awaitingJoin = null;
      this.renewSession(member);
      waiter.resolve(this.joinResult(member));
    }
  }

  /**
   * The leader's assignments did not come in time: members that did not send SyncGroup are out
   * (the leader among them) and the rest rebalance.
   */
  private onSyncDeadline(generation: number): void {
    this.cancelSyncDeadline = null;
    if (this.state !== 'CompletingRebalance' || this.generation !== generation) return;
    for (const member of [...this.members.values()]) {
      if (member.awaitingSync === null) this.removeMember(member);
    }
    this.prepareRebalance();
    this.maybeCompleteJoin();
  }

  private completeSync(assignments: SyncRequest['assignments']): void {
    const byMember = new Map(assignments.map((a) => [a.memberId, a.assignment]));
    this.cancelSyncDeadline?.();
    this.cancelSyncDeadline = null;
    this.state = 'Stable';
    for (const member of this.members.values()) {
      member.assignment = byMember.get(member.memberId) ?? NO_ASSIGNMENT;
      member.awaitingSync?.resolve(this.assignmentOf(member));
      member.awaitingSync = null;
    }
  }

  /** Kafka's vote: each member names its most preferred protocol that every member supports. */
  private selectProtocol(): string {
    const members = [...this.members.values()];
    const candidates = members[0].protocols
      .map((p) => p.name)
      .filter((name) => members.every((m) => m.protocols.some((p) => p.name === name)));
    assert(candidates.length > 0, 'joins are refused unless every member shares a protocol');
    const votes = new Map<string, number>();
    for (const member of members) {
      const choice = member.protocols.find((p) => candidates.includes(p.name))!.name;
      votes.set(choice, (votes.get(choice) ?? 0) + 1);
    }
    return candidates.reduce((best, name) => (votes.get(name)! > votes.get(best)! ? name : best));
  }

  private renewSession(member: Member): void {
    member.cancelSession();
    member.cancelSession = this.clock.schedule(member.sessionTimeoutMs, () => {
      if (this.members.get(member.memberId) !== member) return;
      if (member.awaitingJoin !== null || member.awaitingSync !== null) {
        this.renewSession(member);
        return;
      }
      this.removeMember(member);
      this.afterMemberRemoved();
    });
  }

  private removeMember(member: Member, errorCode: number = ErrorCode.UNKNOWN_MEMBER_ID): void {
    member.cancelSession();
    this.members.delete(member.memberId);
    member.awaitingJoin?.resolve(this.joinError(errorCode, member.memberId));
    member.awaitingSync?.resolve(this.syncResult(errorCode, NO_ASSIGNMENT));
    member.awaitingJoin = null;
    member.awaitingSync = null;
  }

  private afterMemberRemoved(): void {
    switch (this.state) {
      case 'Stable':
      case 'CompletingRebalance':
        this.prepareRebalance();
        this.maybeCompleteJoin();
        return;
      case 'PreparingRebalance':
        this.maybeCompleteJoin();
        return;
      case 'Empty':
        if (this.size === 0) this.onEmpty(this);
        return;
      case 'Dead':
        return;
    }
  }

  /**
   * An id handed out with MEMBER_ID_REQUIRED is gone unused (expired or left): it was never in a
   * generation, so, as Kafka's removePendingMemberAndUpdateGroup, it only lets a rebalance that
   * was waiting for it complete, and leaves a Stable or CompletingRebalance group alone.
   */
  private afterPendingMemberRemoved(): void {
    if (this.state === 'PreparingRebalance') this.maybeCompleteJoin();
    else if (this.state === 'Empty' && this.size === 0) this.onEmpty(this);
  }

  private joinResult(member: Member): JoinResult {
    const isLeader = member.memberId === this.leaderId;
    return {
      errorCode: ErrorCode.NONE,
      generationId: this.generation,
      protocolType: this.protocolType,
      protocolName: this.protocolName!,
      leader: this.leaderId!,
      memberId: member.memberId,
      members: isLeader
        ? [...this.members.values()].map((m) => ({
            memberId: m.memberId,
            groupInstanceId: null,
            metadata: m.protocols.find((p) => p.name === this.protocolName)!.metadata,
          }))
        : [],
    };
  }

  private joinError(errorCode: number, memberId: string): JoinResult {
    return {
      errorCode,
      generationId: -1,
      protocolType: null,
      protocolName: '',
      leader: '',
      memberId,
      members: [],
    };
  }

  private assignmentOf(member: Member): SyncResult {
    return this.syncResult(ErrorCode.NONE, member.assignment);
  }

  private syncResult(errorCode: number, assignment: Buffer): SyncResult {
    return {
      errorCode,
      protocolType: errorCode === ErrorCode.NONE ? this.protocolType : null,
      protocolName: errorCode === ErrorCode.NONE ? this.protocolName : null,
      assignment,
    };
  }
}

function rebalanceTimeoutOf(request: JoinRequest): number {
  return request.rebalanceTimeoutMs < 0 ? request.sessionTimeoutMs : request.rebalanceTimeoutMs;
}

function sameProtocolsAs(a: readonly GroupProtocol[], b: readonly GroupProtocol[]): boolean {
  return (
    a.length === b.length &&
    a.every((p, i) => p.name === b[i].name && p.metadata.equals(b[i].metadata))
  );
}
