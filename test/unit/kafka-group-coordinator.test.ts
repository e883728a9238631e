// The group coordinator's answers that need no log: an OffsetCommit to a group it does not know.
import { describe, expect, it } from 'vitest';
import { GroupCoordinator } from '../../log-node/kafka/group-coordinator.js';
import type { KafkaRequestContext } from '../../log-node/kafka/handler.js';
import { ApiKey, ErrorCode } from '../../shared/kafka/index.js';
import type { LogClient } from '../../shared/log-api.js';
import { createLogger } from '../../shared/logger.js';

/** A log that must not be reached: these commits are refused before any append. */
const unreachableLog = new Proxy({} as LogClient, {
  get(_target, key) {
    throw new Error(`the log was reached (${String(key)})`);
  },
});

const context = {
  connectionId: 1,
  clientId: 'c',
  principal: null,
  viewWriter: false,
  apiVersion: 8,
  signal: new AbortController().signal,
  broker: { nodeId: 0, host: '127.0.0.1', port: 9092 },
  may: () => true,
  onWritten: () => undefined,
} satisfies KafkaRequestContext;

describe('GroupCoordinator OffsetCommit', () => {
  it('answers ILLEGAL_GENERATION to a generation ≥ 0 in a group it does not know, as Kafka does', async () => {
    const coordinator = new GroupCoordinator({
      log: unreachableLog,
      logger: createLogger('kafka-group-coordinator', 'silent'),
    });
    const commit = coordinator.handlers()[ApiKey.OffsetCommit]!;
    for (const generationIdOrMemberEpoch of [0, 3]) {
      const answer = await commit(
        {
          groupId: 'never-joined',
          generationIdOrMemberEpoch,
          memberId: 'some-member',
          groupInstanceId: null,
          retentionTimeMs: -1n,
          topics: [
            {
              name: 'events',
              partitions: [
                { partitionIndex: 0, committedOffset: 5n, committedLeaderEpoch: -1 },
                { partitionIndex: 1, committedOffset: 7n, committedLeaderEpoch: -1 },
              ],
            },
          ],
        },
        context,
      );
      expect(answer).toEqual({
        throttleTimeMs: 0,
        topics: [
          {
            name: 'events',
            partitions: [
              { partitionIndex: 0, errorCode: ErrorCode.ILLEGAL_GENERATION },
              { partitionIndex: 1, errorCode: ErrorCode.ILLEGAL_GENERATION },
            ],
          },
        ],
      });
    }
    coordinator.close();
  });
});

describe('GroupCoordinator scopes', () => {
  it('answers GROUP_AUTHORIZATION_FAILED to a key without the read scope, touching nothing', async () => {
    const coordinator = new GroupCoordinator({
      log: unreachableLog,
      logger: createLogger('kafka-group-coordinator', 'silent'),
    });
    const writeOnly = { ...context, may: (scope: string) => scope === 'write' };
    const handlers = coordinator.handlers();
    const heartbeat = await handlers[ApiKey.Heartbeat]!(
      { groupId: 'g', generationId: 1, memberId: 'm', groupInstanceId: null },
      writeOnly,
    );
    expect(heartbeat).toMatchObject({ errorCode: ErrorCode.GROUP_AUTHORIZATION_FAILED });
    const join = await handlers[ApiKey.JoinGroup]!(
      {
        groupId: 'g',
        sessionTimeoutMs: 10_000,
        rebalanceTimeoutMs: 10_000,
        memberId: '',
        groupInstanceId: null,
        protocolType: 'consumer',
        protocols: [{ name: 'range', metadata: Buffer.alloc(0) }],
        reason: null,
      },
      writeOnly,
    );
    expect(join).toMatchObject({ errorCode: ErrorCode.GROUP_AUTHORIZATION_FAILED });
    const found = (await handlers[ApiKey.FindCoordinator]!(
      { key: 'g', keyType: 0, coordinatorKeys: ['g'] },
      writeOnly,
    )) as { coordinators: { errorCode: number }[] };
    expect(found.coordinators[0].errorCode).toBe(ErrorCode.GROUP_AUTHORIZATION_FAILED);
    coordinator.close();
  });
});

describe('GroupCoordinator generations', () => {
  it('goes on from the generation a group had when it emptied, so no generation is dealt twice', async () => {
    const coordinator = new GroupCoordinator({
      log: unreachableLog,
      logger: createLogger('kafka-group-coordinator', 'silent'),
      limits: { initialRebalanceDelayMs: 0 },
    });
    const handlers = coordinator.handlers();
    // JoinGroup v3: a new member is taken at once, with no MEMBER_ID_REQUIRED round.
    const old = { ...context, apiVersion: 3 };
    const join = async () =>
      (await handlers[ApiKey.JoinGroup]!(
        {
          groupId: 'views',
          sessionTimeoutMs: 10_000,
          rebalanceTimeoutMs: 10_000,
          memberId: '',
          groupInstanceId: null,
          protocolType: 'tailbase-views',
          protocols: [{ name: 'round-robin', metadata: Buffer.alloc(0) }],
          reason: null,
        },
        old,
      )) as { errorCode: number; generationId: number; memberId: string };
    const generations: number[] = [];
    for (let round = 0; round < 3; round++) {
      const joined = await join();
      expect(joined.errorCode).toBe(ErrorCode.NONE);
      generations.push(joined.generationId);
      // The one member leaves: the group empties (a generation with no one) and is forgotten.
      const left = await handlers[ApiKey.LeaveGroup]!(
        { groupId: 'views', memberId: joined.memberId, members: [] },
        old,
      );
      expect(left).toMatchObject({ errorCode: ErrorCode.NONE });
    }
    expect(generations).toEqual([1, 3, 5]);
    coordinator.close();
  });
});
