/**
 * A member of a Kafka consumer group (the classic protocol: JoinGroup, SyncGroup, Heartbeat,
 * LeaveGroup), for work that must run in one place at a time. The leader the coordinator picks
 * assigns the work (`assign`, over every member's metadata); each member is handed its share and
 * heartbeats until the coordinator says a rebalance is under way, then joins again. Assignments
 * are not revoked before a rejoin (the eager protocol would stop every task at each rebalance):
 * the member learns what it keeps and what it loses from the next assignment, so for a moment a
 * task may run on two members, which is why the work itself must be fenced (views/README.md).
 * A member that loses its membership (expelled after a pause: UNKNOWN_MEMBER_ID, or a heartbeat
 * unanswered for a whole session) gives up everything at once, as a new member would have none.
 *
 * Join, sync and heartbeat go over a connection of the member's own: a JoinGroup long-polls until
 * the rebalance completes and must not hold up the client's shared connection.
 */
import { Buffer } from 'node:buffer';
import { TailbaseError } from '../errors.js';
import { ApiKey, ErrorCode } from '../kafka/index.js';
import type { Logger } from '../logger.js';
import { BrokerConnection } from './broker-connection.js';
import type { KafkaLogConfig } from './config.js';
import { wireName } from './config.js';
import {
  coordinatorError,
  COORDINATOR_ERRORS,
  type GroupCoordinators,
} from './group-coordinator.js';

export interface GroupMemberLimits {
  /** How long the coordinator keeps a member that does not heartbeat (session.timeout.ms). */
  sessionTimeoutMs: number;
  /** How long a rebalance waits for every member to join again (max.poll.interval.ms's role). */
  rebalanceTimeoutMs: number;
  /** How often a member heartbeats (heartbeat.interval.ms): well under the session timeout. */
  heartbeatIntervalMs: number;
  /** The rest after a failed round (coordinator unreachable, moved) before the next, ms. */
  retryMs: number;
}

export const groupMemberDefaults: Readonly<GroupMemberLimits> = Object.freeze({
  sessionTimeoutMs: 10_000,
  rebalanceTimeoutMs: 30_000,
  heartbeatIntervalMs: 1_000,
  retryMs: 500,
});

export interface MemberMetadata {
  memberId: string;
  metadata: Uint8Array;
}

/** A member's place in one generation of the group: what its commits must carry. */
export interface GroupGeneration {
  generationId: number;
  memberId: string;
}

export interface GroupMemberOptions {
  groupId: string;
  /** The protocol type every member names (`consumer` for Kafka consumers; ours is our own). */
  protocolType: string;
  /** The one assignment protocol this member speaks. */
  protocolName: string;
  limits?: Partial<GroupMemberLimits>;
  /** This member's metadata for its next join. */
  metadata(): Buffer;
  /** The leader's part: each member's assignment, by member id. */
  assign(members: readonly MemberMetadata[]): Map<string, Buffer>;
  /** The share this member holds from this generation on (awaited before it heartbeats). */
  assigned(generation: GroupGeneration, assignment: Uint8Array): Promise<void>;
  /** Everything this member held is no longer its own (awaited before it joins again). */
  revoked(): Promise<void>;
  logger: Logger;
}

/** Why a member stops heartbeating: join again keeping its id, or as a new member. */
type Rejoin = 'rebalance' | 'expelled' | 'coordinator';

export class GroupMember {
  private readonly limits: GroupMemberLimits;
  private memberId = '';
  private current: GroupGeneration | null = null;
  private connection: BrokerConnection | null = null;
  private rejoinAsked = false;
  private stopped = false;
  private loop: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  /** When the coordinator last answered this member (performance.now()). */
  private answeredAt = performance.now();

  constructor(
    private readonly config: KafkaLogConfig,
    private readonly coordinators: GroupCoordinators,
    private readonly options: GroupMemberOptions,
  ) {
    this.limits = { ...groupMemberDefaults, ...options.limits };
    if (this.limits.heartbeatIntervalMs * 3 > this.limits.sessionTimeoutMs) {
      throw new Error('heartbeatIntervalMs must be at most a third of sessionTimeoutMs');
    }
  }

  start(): void {
    this.loop ??= this.run();
  }

  /** Joins again at the next heartbeat, with fresh metadata: the leader assigns anew. */
  rejoin(): void {
    this.rejoinAsked = true;
    this.wake?.();
  }

  /** Leaves the group (its work moves at once, not after a session timeout). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.loop;
    const connection = this.connection;
    if (this.memberId !== '' && connection !== null) {
      await connection
        .request(
          ApiKey.LeaveGroup,
          {
            groupId: this.options.groupId,
            memberId: this.memberId,
            members: [{ memberId: this.memberId }],
          },
          { timeoutMs: this.config.answerMsMax },
        )
        .catch(() => undefined);
    }
    connection?.close();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      let reason: Rejoin;
      try {
        reason = await this.round();
      } catch (error) {
        if (this.stopped) break;
        this.options.logger.warn({ err: error, group: this.options.groupId }, 'group round failed');
        reason = 'coordinator';
        // Unheard for a whole session, the coordinator has dealt our share to others. Nobody
        // awaits this loop: a revoked callback that fails too is logged, not let out.
        if (this.current !== null && this.silentForSession()) {
          reason = await this.expire('expelled').catch((failure: unknown) => {
            this.options.logger.warn(
              { err: failure, group: this.options.groupId },
              'revoking the expelled member failed',
            );
            return 'expelled' as const;
          });
        }
        await this.pause(this.limits.retryMs);
      }
      if (reason !== 'rebalance') {
        this.connection?.close();
        this.connection = null;
      }
      if (reason === 'expelled') this.memberId = '';
    }
    await this.giveUp();
  }

  /** One generation: join, sync, take the assignment, heartbeat until it ends. */
  private async round(): Promise<Rejoin> {
    this.connection ??= new BrokerConnection(
      await this.coordinators.find(this.options.groupId),
      this.config,
    );
    const connection = this.connection;
    this.rejoinAsked = false;
    const joined = await this.join(connection);
    if (joined === null) return 'rebalance';
    if (typeof joined === 'string') return this.expire(joined);
    const assignments =
      joined.leader === this.memberId
        ? [...this.options.assign(joined.members)].map(([memberId, assignment]) => ({
            memberId,
            assignment,
          }))
        : [];
    const synced = await connection.request(
      ApiKey.SyncGroup,
      {
        groupId: this.options.groupId,
        generationId: joined.generationId,
        memberId: this.memberId,
        protocolType: this.options.protocolType,
        protocolName: this.options.protocolName,
        assignments,
      },
      { timeoutMs: this.limits.rebalanceTimeoutMs + this.config.answerMsMax },
    );
    if (synced.errorCode === ErrorCode.REBALANCE_IN_PROGRESS) return 'rebalance';
    if (synced.errorCode !== ErrorCode.NONE)
      return this.expire(this.rejoinOf(synced.errorCode, 'SyncGroup'));
    this.answeredAt = performance.now();
    const generation = { generationId: joined.generationId, memberId: this.memberId };
    await this.options.assigned(generation, synced.assignment);
    this.current = generation;
    return this.heartbeat(connection, generation);
  }

  /**
   * JoinGroup until it answers a generation (a first join is answered MEMBER_ID_REQUIRED with the
   * id to join with); null to join again, or why the member must start over.
   */
  private async join(connection: BrokerConnection): Promise<
    | {
        generationId: number;
        leader: string;
        members: MemberMetadata[];
      }
    | Rejoin
    | null
  > {
    const answer = await connection.request(
      ApiKey.JoinGroup,
      {
        groupId: this.options.groupId,
        sessionTimeoutMs: this.limits.sessionTimeoutMs,
        rebalanceTimeoutMs: this.limits.rebalanceTimeoutMs,
        memberId: this.memberId,
        protocolType: this.options.protocolType,
        protocols: [{ name: this.options.protocolName, metadata: this.options.metadata() }],
      },
      { timeoutMs: this.limits.rebalanceTimeoutMs * 2 + this.config.answerMsMax },
    );
    if (answer.errorCode === ErrorCode.MEMBER_ID_REQUIRED) {
      this.memberId = answer.memberId;
      return null;
    }
    if (answer.errorCode !== ErrorCode.NONE) return this.rejoinOf(answer.errorCode, 'JoinGroup');
    this.memberId = answer.memberId;
    return {
      generationId: answer.generationId,
      leader: answer.leader,
      members: answer.members.map((m) => ({ memberId: m.memberId, metadata: m.metadata })),
    };
  }

  /** Heartbeats every heartbeatIntervalMs until the generation ends; why it ended. */
  private async heartbeat(
    connection: BrokerConnection,
    generation: GroupGeneration,
  ): Promise<Rejoin> {
    for (;;) {
      await this.pause(this.limits.heartbeatIntervalMs);
      if (this.stopped) return 'coordinator';
      if (this.rejoinAsked) return 'rebalance';
      try {
        const answer = await connection.request(
          ApiKey.Heartbeat,
          { groupId: this.options.groupId, ...generation },
          { timeoutMs: this.config.answerMsMax },
        );
        this.answeredAt = performance.now();
        if (answer.errorCode === ErrorCode.NONE) continue;
        if (answer.errorCode === ErrorCode.REBALANCE_IN_PROGRESS) return 'rebalance';
        return this.expire(this.rejoinOf(answer.errorCode, 'Heartbeat'));
      } catch (error) {
        // The coordinator may have expelled us meanwhile: past a session, nothing is ours.
        if (this.silentForSession()) {
          this.options.logger.warn(
            { err: error, group: this.options.groupId },
            'no heartbeat answered for a whole session: giving up the assignment',
          );
          return this.expire('expelled');
        }
        if (!connection.usable) return 'coordinator';
      }
    }
  }

  private silentForSession(): boolean {
    return performance.now() - this.answeredAt >= this.limits.sessionTimeoutMs;
  }

  private rejoinOf(errorCode: number, api: string): Rejoin {
    if (errorCode === ErrorCode.REBALANCE_IN_PROGRESS) return 'rebalance';
    if (COORDINATOR_ERRORS.has(errorCode)) return 'coordinator';
    if (
      errorCode === ErrorCode.UNKNOWN_MEMBER_ID ||
      errorCode === ErrorCode.ILLEGAL_GENERATION ||
      errorCode === ErrorCode.FENCED_INSTANCE_ID
    ) {
      return 'expelled';
    }
    throw coordinatorError(errorCode, `${api} of group ${this.options.groupId}`);
  }

  /** An expelled member holds nothing: its work is given up before it joins again. */
  private async expire(reason: Rejoin): Promise<Rejoin> {
    if (reason === 'expelled') await this.giveUp();
    return reason;
  }

  private async giveUp(): Promise<void> {
    this.current = null;
    await this.options.revoked();
  }

  /**
   * Commits offsets (topic → partition → offset and metadata) as this member of its current
   * generation: the coordinator refuses a member that is no longer in the group or a generation
   * that is over (ILLEGAL_GENERATION), so what an expelled member commits is never taken.
   */
  async commit(
    topic: string,
    partitions: readonly { partition: number; offset: number; metadata: string }[],
  ): Promise<void> {
    const generation = this.current;
    if (generation === null) {
      throw new TailbaseError(409, 'group_generation_over', 'this member holds no assignment');
    }
    await this.coordinators.ask(this.options.groupId, async (connection) => {
      const answer = await connection.request(
        ApiKey.OffsetCommit,
        {
          groupId: this.options.groupId,
          generationIdOrMemberEpoch: generation.generationId,
          memberId: generation.memberId,
          topics: [
            {
              name: wireName(this.config, topic),
              partitions: partitions.map((p) => ({
                partitionIndex: p.partition,
                committedOffset: p.offset,
                committedMetadata: p.metadata,
              })),
            },
          ],
        },
        { timeoutMs: this.config.answerMsMax },
      );
      for (const t of answer.topics) {
        for (const p of t.partitions) {
          if (p.errorCode !== ErrorCode.NONE) {
            throw coordinatorError(
              p.errorCode,
              `committing ${topic} for group ${this.options.groupId}`,
            );
          }
        }
      }
    });
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wake = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wake = done;
    });
  }
}
