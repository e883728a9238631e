/**
 * The group APIs on a log-node that does not store partition 0: groups are coordinated by the
 * one that does (their committed offsets live in partition 0 of __consumer_offsets).
 * FindCoordinator names that peer, so a consumer bootstrapped here goes there for its group; the
 * others answer NOT_COORDINATOR, which sends a client back to FindCoordinator. They are served
 * at all because clients (kafkajs) take one broker's ApiVersions for the whole cluster's.
 */
import { ApiKey, ErrorCode, type RequestBody } from '../../shared/kafka/index.js';
import type { KafkaHandler, KafkaHandlers, KafkaRequestContext } from './handler.js';
import type { KafkaPeers } from './peers.js';

type FindCoordinator = RequestBody<typeof ApiKey.FindCoordinator>;
type OffsetCommit = RequestBody<typeof ApiKey.OffsetCommit>;
type OffsetFetch = RequestBody<typeof ApiKey.OffsetFetch>;

const NOT_COORDINATOR = ErrorCode.NOT_COORDINATOR;

export function coordinatorElsewhereHandlers(peers: KafkaPeers): KafkaHandlers {
  const findCoordinator: KafkaHandler = async (
    body: FindCoordinator,
    context: KafkaRequestContext,
  ) => {
    const owner = (await peers.brokers()).find((peer) => peer.hostedPartitions.includes(0));
    const keys = body.coordinatorKeys.length > 0 ? body.coordinatorKeys : [body.key];
    const coordinators = keys.map((key) => {
      const refusal = !context.may('read')
        ? {
            errorCode: ErrorCode.GROUP_AUTHORIZATION_FAILED,
            errorMessage: 'the key lacks the read scope',
          }
        : owner === undefined
          ? {
              errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE,
              errorMessage: 'the log-node that stores partition 0 has not answered yet',
            }
          : null;
      return refusal === null && owner !== undefined
        ? {
            key,
            nodeId: owner.nodeId,
            host: owner.host,
            port: owner.port,
            errorCode: ErrorCode.NONE,
            errorMessage: null,
          }
        : { key, nodeId: -1, host: '', port: -1, ...refusal! };
    });
    const { key: _key, ...first } = coordinators[0];
    return { throttleTimeMs: 0, ...first, coordinators };
  };
  return {
    [ApiKey.FindCoordinator]: findCoordinator,
    [ApiKey.JoinGroup]: () => ({ errorCode: NOT_COORDINATOR, protocolName: null, members: [] }),
    [ApiKey.SyncGroup]: () => ({ errorCode: NOT_COORDINATOR, assignment: Buffer.alloc(0) }),
    [ApiKey.Heartbeat]: () => ({ errorCode: NOT_COORDINATOR }),
    [ApiKey.LeaveGroup]: () => ({ errorCode: NOT_COORDINATOR, members: [] }),
    [ApiKey.OffsetCommit]: (body: OffsetCommit) => ({
      topics: body.topics.map((topic) => ({
        name: topic.name,
        partitions: topic.partitions.map(({ partitionIndex }) => ({
          partitionIndex,
          errorCode: NOT_COORDINATOR,
        })),
      })),
    }),
    [ApiKey.OffsetFetch]: (body: OffsetFetch) => ({
      errorCode: NOT_COORDINATOR,
      topics: [],
      groups: body.groups.map(({ groupId }) => ({
        groupId,
        topics: [],
        errorCode: NOT_COORDINATOR,
      })),
    }),
  };
}
