/**
 * The group coordinator: the Kafka APIs of consumer groups (FindCoordinator, JoinGroup, SyncGroup,
 * Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch) over the log contract. This log-node is the
 * coordinator of every group (FindCoordinator names the broker the client reached); membership
 * lives in memory (group-membership.ts) and committed offsets in the log's `__consumer_offsets`
 * topic (group-offset-store.ts, records in group-offset-record.ts).
 *
 * Handlers read one body shape whatever the version: the codec fills the fields a version lacks
 * with their defaults, so LeaveGroup's legacy `memberId` and v3's `members`, and OffsetFetch's
 * `groupId`/`topics` and v8's `groups`, are told apart by which one holds data, and every answer
 * carries both forms (the encoder writes the one its version has). The one version check is
 * JoinGroup's: from v4 on a new member must rejoin with the id it is handed (KIP-394).
 */
import { Buffer } from 'node:buffer';
import { TailbaseError } from '../../shared/errors.js';
import {
  ApiKey,
  ErrorCode,
  type RequestBody,
  type ResponseInput,
} from '../../shared/kafka/index.js';
import type { LogClient } from '../../shared/log-api.js';
import type { Logger } from '../../shared/logger.js';
import { systemGroupClock, type GroupClock } from './group-clock.js';
import { groupLimits, type GroupLimits } from './group-limits.js';
import { ConsumerGroup } from './group-membership.js';
import type { CommittedOffset } from './group-offset-record.js';
import { OffsetStore, type OffsetCommit } from './group-offset-store.js';
import type { KafkaHandlers, KafkaRequestContext } from './handler.js';

/** FindCoordinator's key types (KIP-98): a group, or a transactional id. */
const KEY_TYPE_GROUP = 0;
const KEY_TYPE_TRANSACTION = 1;
/** The JoinGroup version from which a new member first gets MEMBER_ID_REQUIRED (KIP-394). */
const JOIN_GROUP_MEMBER_ID_REQUIRED_VERSION = 4;
/** OffsetFetch's answer for a partition the group never committed. */
const NO_OFFSET = -1;
const NO_LEADER_EPOCH = -1;

export interface GroupCoordinatorOptions {
  log: LogClient;
  limits?: Partial<GroupLimits>;
  clock?: GroupClock;
  logger: Logger;
}

type Join = RequestBody<typeof ApiKey.JoinGroup>;
type Sync = RequestBody<typeof ApiKey.SyncGroup>;
type Heartbeat = RequestBody<typeof ApiKey.Heartbeat>;
type Leave = RequestBody<typeof ApiKey.LeaveGroup>;
type Commit = RequestBody<typeof ApiKey.OffsetCommit>;
type OffsetFetch = RequestBody<typeof ApiKey.OffsetFetch>;
type FindCoordinator = RequestBody<typeof ApiKey.FindCoordinator>;
type CommitAnswer = ResponseInput<typeof ApiKey.OffsetCommit>;
type FetchedTopic = {
  name: string;
  partitions: {
    partitionIndex: number;
    committedOffset: number;
    committedLeaderEpoch: number;
    metadata: string | null;
    errorCode: number;
  }[];
};

export class GroupCoordinator {
  readonly limits: GroupLimits;
  private readonly log: LogClient;
  private readonly clock: GroupClock;
  private readonly logger: Logger;
  private readonly groups = new Map<string, ConsumerGroup>();
  /**
   * The generation of each group forgot when it emptied (at most `groupsMax`, the oldest dropped):
   * joined again, it goes on from there, as Kafka keeps an empty group that has offsets, so a
   * generation names one deal in a run of this coordinator.
   */
  private readonly emptiedGenerations = new Map<string, number>();
  private readonly offsets: OffsetStore;
  private closed = false;

  constructor(options: GroupCoordinatorOptions) {
    this.log = options.log;
    this.limits = groupLimits(options.limits);
    this.clock = options.clock ?? systemGroupClock;
    this.logger = options.logger;
    this.offsets = new OffsetStore(options.log, this.limits.offsetsLoadReadBytes);
  }

  /** Rebuilds the committed offsets now rather than at the first commit or fetch. */
  async load(): Promise<void> {
    const loaded = await this.offsets.load();
    if (loaded.skipped > 0) {
      this.logger.warn(loaded, 'records of __consumer_offsets not in the coordinator form skipped');
    }
  }

  handlers(): KafkaHandlers {
    return {
      [ApiKey.FindCoordinator]: (body: FindCoordinator, context) =>
        this.findCoordinator(body, context),
      [ApiKey.JoinGroup]: (body: Join, context) => this.joinGroup(body, context),
      [ApiKey.SyncGroup]: (body: Sync, context) => this.syncGroup(body, context),
      [ApiKey.Heartbeat]: (body: Heartbeat, context) => this.heartbeat(body, context),
      [ApiKey.LeaveGroup]: (body: Leave, context) => this.leaveGroup(body, context),
      [ApiKey.OffsetCommit]: (body: Commit, context) => this.offsetCommit(body, context),
      [ApiKey.OffsetFetch]: (body: OffsetFetch, context) => this.offsetFetch(body, context),
    };
  }

  /** Every group is closed: waiting joins and syncs answer COORDINATOR_NOT_AVAILABLE. */
  close(): void {
    this.closed = true;
    for (const group of [...this.groups.values()]) group.close();
    this.groups.clear();
  }

  private findCoordinator(body: FindCoordinator, context: KafkaRequestContext) {
    const keys = body.coordinatorKeys.length > 0 ? body.coordinatorKeys : [body.key];
    const coordinators = keys.map((key) => {
      const { errorCode, errorMessage } = context.may('read')
        ? this.coordinatorError(body.keyType)
        : {
            errorCode: ErrorCode.GROUP_AUTHORIZATION_FAILED,
            errorMessage: 'the key lacks the read scope',
          };
      const found = errorCode === ErrorCode.NONE;
      return {
        key,
        nodeId: found ? context.broker.nodeId : -1,
        host: found ? context.broker.host : '',
        port: found ? context.broker.port : -1,
        errorCode,
        errorMessage,
      };
    });
    const { key: _key, ...first } = coordinators[0];
    return { throttleTimeMs: 0, ...first, coordinators };
  }

  private coordinatorError(keyType: number): { errorCode: number; errorMessage: string | null } {
    if (this.closed) {
      return { errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE, errorMessage: 'shutting down' };
    }
    if (keyType === KEY_TYPE_GROUP) return { errorCode: ErrorCode.NONE, errorMessage: null };
    if (keyType === KEY_TYPE_TRANSACTION) {
      return {
        errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE,
        errorMessage: 'tailbase has no transaction coordinator: transactions are not supported',
      };
    }
    return { errorCode: ErrorCode.INVALID_REQUEST, errorMessage: `unknown key type ${keyType}` };
  }

  private async joinGroup(body: Join, context: KafkaRequestContext) {
    const refused = (errorCode: number) => ({
      throttleTimeMs: 0,
      errorCode,
      generationId: -1,
      protocolType: null,
      protocolName: '',
      leader: '',
      skipAssignment: false,
      memberId: body.memberId,
      members: [],
    });
    const invalid = this.groupIdError(body.groupId, context);
    if (invalid !== ErrorCode.NONE) return refused(invalid);
    let group = this.groups.get(body.groupId);
    if (group === undefined) {
      if (this.closed || this.groups.size >= this.limits.groupsMax) {
        // Retriable: the client finds the coordinator again and retries while groups come and go.
        return refused(ErrorCode.COORDINATOR_NOT_AVAILABLE);
      }
      group = new ConsumerGroup(
        body.groupId,
        this.limits,
        this.clock,
        (empty) => {
          if (this.groups.get(empty.groupId) !== empty) return;
          this.groups.delete(empty.groupId);
          this.rememberGeneration(empty.groupId, empty.generationId);
        },
        this.emptiedGenerations.get(body.groupId),
      );
      this.groups.set(body.groupId, group);
    }
    const joined = group.join({
      memberId: body.memberId,
      groupInstanceId: body.groupInstanceId,
      clientId: context.clientId ?? 'member',
      sessionTimeoutMs: body.sessionTimeoutMs,
      rebalanceTimeoutMs: body.rebalanceTimeoutMs,
      protocolType: body.protocolType,
      protocols: body.protocols,
      requireKnownMemberId: context.apiVersion >= JOIN_GROUP_MEMBER_ID_REQUIRED_VERSION,
      signal: context.signal,
    });
    // A join refused before it entered leaves a group that never had a member.
    if (group.size === 0 && group.currentState === 'Empty') this.groups.delete(body.groupId);
    return { throttleTimeMs: 0, skipAssignment: false, ...(await joined) };
  }

  private rememberGeneration(groupId: string, generation: number): void {
    this.emptiedGenerations.delete(groupId);
    this.emptiedGenerations.set(groupId, generation);
    if (this.emptiedGenerations.size > this.limits.groupsMax) {
      this.emptiedGenerations.delete(this.emptiedGenerations.keys().next().value!);
    }
  }

  private async syncGroup(body: Sync, context: KafkaRequestContext) {
    const refused = (errorCode: number) => ({
      throttleTimeMs: 0,
      errorCode,
      protocolType: null,
      protocolName: null,
      assignment: Buffer.alloc(0),
    });
    const invalid = this.groupIdError(body.groupId, context);
    if (invalid !== ErrorCode.NONE) return refused(invalid);
    const group = this.groups.get(body.groupId);
    if (group === undefined) return refused(ErrorCode.UNKNOWN_MEMBER_ID);
    const synced = await group.sync({
      memberId: body.memberId,
      generationId: body.generationId,
      protocolType: body.protocolType,
      protocolName: body.protocolName,
      assignments: body.assignments,
      signal: context.signal,
    });
    return { throttleTimeMs: 0, ...synced };
  }

  private heartbeat(body: Heartbeat, context: KafkaRequestContext) {
    const invalid = this.groupIdError(body.groupId, context);
    const group = this.groups.get(body.groupId);
    const errorCode =
      invalid !== ErrorCode.NONE
        ? invalid
        : (group?.heartbeat(body.memberId, body.generationId) ?? ErrorCode.UNKNOWN_MEMBER_ID);
    return { throttleTimeMs: 0, errorCode };
  }

  private leaveGroup(body: Leave, context: KafkaRequestContext) {
    const invalid = this.groupIdError(body.groupId, context);
    if (invalid !== ErrorCode.NONE) return { throttleTimeMs: 0, errorCode: invalid, members: [] };
    // v0-2 name one member at the top; v3+ list them (the codec leaves the other form empty).
    const legacy = body.members.length === 0;
    const leaving = legacy
      ? [{ memberId: body.memberId, groupInstanceId: null }]
      : body.members.map((m) => ({ memberId: m.memberId, groupInstanceId: m.groupInstanceId }));
    const members = leaving.map((m) => ({
      ...m,
      errorCode: this.groups.get(body.groupId)?.leave(m.memberId) ?? ErrorCode.UNKNOWN_MEMBER_ID,
    }));
    return {
      throttleTimeMs: 0,
      errorCode: legacy ? members[0].errorCode : ErrorCode.NONE,
      members,
    };
  }

  private async offsetCommit(body: Commit, context: KafkaRequestContext): Promise<CommitAnswer> {
    const answer = (errorOf: (topic: string, partition: number) => number): CommitAnswer => ({
      throttleTimeMs: 0,
      topics: body.topics.map((t) => ({
        name: t.name,
        partitions: t.partitions.map((p) => ({
          partitionIndex: p.partitionIndex,
          errorCode: errorOf(t.name, p.partitionIndex),
        })),
      })),
    });
    const invalid = this.closed
      ? ErrorCode.COORDINATOR_NOT_AVAILABLE
      : this.groupIdError(body.groupId, context);
    if (invalid !== ErrorCode.NONE) return answer(() => invalid);
    const group = this.groups.get(body.groupId);
    const generationId = body.generationIdOrMemberEpoch;
    // A group not known here takes commits only from clients managing their own partitions
    // (generation −1); a generation ≥ 0 is one this coordinator never formed (or has forgotten,
    // as after a restart), which Kafka's handleCommitOffsets answers ILLEGAL_GENERATION.
    const memberError =
      group !== undefined
        ? group.checkCommit(body.memberId, generationId)
        : generationId < 0
          ? ErrorCode.NONE
          : ErrorCode.ILLEGAL_GENERATION;
    if (memberError !== ErrorCode.NONE) return answer(() => memberError);

    const partitionsOf = new Map((await this.log.topics()).map((t) => [t.name, t.partitions]));
    const errors = new Map<string, number>();
    const commits: OffsetCommit[] = [];
    const commitTimestampMs = this.clock.nowMs();
    for (const topic of body.topics) {
      for (const p of topic.partitions) {
        const error = this.commitError(partitionsOf.get(topic.name), p);
        errors.set(partitionKey(topic.name, p.partitionIndex), error);
        if (error !== ErrorCode.NONE) continue;
        commits.push({
          topic: topic.name,
          partition: p.partitionIndex,
          committed: {
            offset: Number(p.committedOffset),
            leaderEpoch: p.committedLeaderEpoch,
            metadata: p.committedMetadata,
            commitTimestampMs,
          },
        });
      }
    }
    try {
      // Not cut short when the connection closes: the table follows what the log holds.
      await this.offsets.commit(body.groupId, commits);
    } catch (error) {
      const failed = this.commitFailure(error, body.groupId);
      for (const c of commits) errors.set(partitionKey(c.topic, c.partition), failed);
    }
    return answer((topic, partition) => errors.get(partitionKey(topic, partition))!);
  }

  private commitError(
    partitions: number | undefined,
    p: Commit['topics'][number]['partitions'][number],
  ): number {
    if (partitions === undefined || p.partitionIndex < 0 || p.partitionIndex >= partitions) {
      return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION;
    }
    if (
      p.committedMetadata !== null &&
      Buffer.byteLength(p.committedMetadata) > this.limits.offsetMetadataBytesMax
    ) {
      return ErrorCode.OFFSET_METADATA_TOO_LARGE;
    }
    // Offsets are int64 on the wire; the log's offsets are safe integers, and so is a commit.
    const offset = p.committedOffset;
    if (offset < -1n || offset > BigInt(Number.MAX_SAFE_INTEGER)) {
      return ErrorCode.OFFSET_OUT_OF_RANGE;
    }
    return ErrorCode.NONE;
  }

  /** Kafka's answers to a commit the log refused: too large, or retry after finding us again. */
  private commitFailure(error: unknown, groupId: string): number {
    if (error instanceof TailbaseError && error.status === 413) {
      return ErrorCode.INVALID_COMMIT_OFFSET_SIZE;
    }
    this.logger.warn({ err: error, groupId }, 'an offset commit failed to append');
    return ErrorCode.COORDINATOR_NOT_AVAILABLE;
  }

  private async offsetFetch(body: OffsetFetch, context: KafkaRequestContext) {
    // v8 lists groups; v1-7 name one at the top (the codec leaves the other form empty).
    const asked =
      body.groups.length > 0 ? body.groups : [{ groupId: body.groupId, topics: body.topics }];
    let loadError: number = ErrorCode.NONE;
    try {
      await this.load();
    } catch (error) {
      this.logger.warn({ err: error }, 'committed offsets could not be loaded');
      loadError = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS;
    }
    const groups = await Promise.all(
      asked.map(async ({ groupId, topics }) => {
        const invalid =
          loadError !== ErrorCode.NONE ? loadError : this.groupIdError(groupId, context);
        if (invalid !== ErrorCode.NONE) return { groupId, topics: [], errorCode: invalid };
        return {
          groupId,
          topics: await this.fetchedTopics(groupId, topics),
          errorCode: ErrorCode.NONE,
        };
      }),
    );
    return {
      throttleTimeMs: 0,
      topics: groups[0]?.topics ?? [],
      errorCode: groups[0]?.errorCode ?? ErrorCode.NONE,
      groups,
    };
  }

  /** The committed offsets of the partitions asked for, or of all the group has when topics is null. */
  private async fetchedTopics(
    groupId: string,
    topics: readonly { name: string; partitionIndexes: number[] }[] | null,
  ): Promise<FetchedTopic[]> {
    const committed = await this.offsets.committedByTopic(groupId);
    const asked =
      topics ??
      [...committed].map(([name, byPartition]) => ({
        name,
        partitionIndexes: [...byPartition.keys()],
      }));
    return asked.map(({ name, partitionIndexes }) => ({
      name,
      partitions: partitionIndexes.map((partitionIndex) =>
        fetchedPartition(partitionIndex, committed.get(name)?.get(partitionIndex)),
      ),
    }));
  }

  /** A group id this key may use (the read scope, as a consumer) and the coordinator takes. */
  private groupIdError(groupId: string, context: KafkaRequestContext): number {
    if (!context.may('read')) return ErrorCode.GROUP_AUTHORIZATION_FAILED;
    if (groupId === '' || Buffer.byteLength(groupId) > this.limits.groupIdBytesMax) {
      return ErrorCode.INVALID_GROUP_ID;
    }
    return ErrorCode.NONE;
  }
}

function fetchedPartition(partitionIndex: number, committed: CommittedOffset | undefined) {
  return {
    partitionIndex,
    committedOffset: committed?.offset ?? NO_OFFSET,
    committedLeaderEpoch: committed?.leaderEpoch ?? NO_LEADER_EPOCH,
    metadata: committed?.metadata ?? '',
    errorCode: ErrorCode.NONE,
  };
}

function partitionKey(topic: string, partition: number): string {
  return `${partition}:${topic}`;
}
